"""CORS from a real browser: headless Chromium (Debian's `chromium`) loads a page from another
origin (another port of 127.0.0.1) whose script PUTs and GETs objects with presigned URLs.
The browser itself sends the OPTIONS preflight and enforces the Access-Control-* answers, so
this checks what a dashboard in a browser gets, not only the headers (test_s3_cors.py)."""
import http.server
import json
import re
import shutil
import subprocess
import threading

import pytest

CHROMIUM = shutil.which("chromium")
BODY = "written by a browser"


def serve_page(html):
    """A one-page HTTP server on a free port of 127.0.0.1 (the page's origin); returns it."""
    page = html.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def run_page(tmp_path, url):
    """Loads url in headless Chromium until its script is done; returns what it reported."""
    p = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server",
         "--no-first-run", f"--user-data-dir={tmp_path / 'chromium'}",
         "--virtual-time-budget=20000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="out">(.*?)</pre>', p.stdout, re.S)
    assert m, f"no report from the page:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


SCRIPT = """<html><body><pre id="out">pending</pre><script>
const urls = %s;
async function attempt(name, f) {
  try { return await f(); } catch (e) { return "blocked:" + e.name; }
}
(async () => {
  const r = {};
  r.put = await attempt("put", async () => {
    const x = await fetch(urls.put, {method: "PUT", body: %s});
    return {status: x.status, etag: x.headers.get("ETag")};
  });
  r.get = await attempt("get", async () => {
    const x = await fetch(urls.get);
    return {status: x.status, text: await x.text(),
            request_id: x.headers.get("x-amz-request-id")};
  });
  r.delete = await attempt("delete", async () => (await fetch(urls.del, {method: "DELETE"})).status);
  r.other_bucket = await attempt("other", async () => (await fetch(urls.other)).status);
  document.getElementById("out").textContent = JSON.stringify(r);
})();
</script></body></html>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed: scripts/install-deps")
def test_browser_puts_and_gets_across_origins(s3, bucket, tmp_path):
    other = bucket + "-nocors"
    s3.create_bucket(Bucket=other)
    try:
        s3.put_object(Bucket=other, Key="k", Body=b"private")
        urls = {
            "put": s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "b"}),
            "get": s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "b"}),
            "del": s3.generate_presigned_url("delete_object",
                                             Params={"Bucket": bucket, "Key": "b"}),
            "other": s3.generate_presigned_url("get_object", Params={"Bucket": other, "Key": "k"}),
        }
        page = serve_page(SCRIPT % (json.dumps(urls), json.dumps(BODY)))
        try:
            origin = f"http://127.0.0.1:{page.server_address[1]}"
            # GET and PUT from the page's origin, ETag exposed; DELETE not allowed.
            s3.put_bucket_cors(Bucket=bucket, CORSConfiguration={"CORSRules": [
                {"AllowedOrigins": [origin], "AllowedMethods": ["GET", "PUT"],
                 "AllowedHeaders": ["*"], "ExposeHeaders": ["ETag"], "MaxAgeSeconds": 60}]})
            r = run_page(tmp_path, origin + "/")
        finally:
            page.shutdown()
        # PUT is not a simple method: it went through the browser's preflight.
        want_etag = s3.head_object(Bucket=bucket, Key="b")["ETag"]
        assert r["put"] == {"status": 200, "etag": want_etag}
        assert s3.get_object(Bucket=bucket, Key="b")["Body"].read() == BODY.encode()
        # The GET's body is readable by the script; x-amz-request-id is not exposed.
        assert r["get"] == {"status": 200, "text": BODY, "request_id": None}
        # DELETE's preflight finds no rule: the browser never sends it.
        assert r["delete"] == "blocked:TypeError"
        assert s3.head_object(Bucket=bucket, Key="b")["ContentLength"] == len(BODY)
        # A bucket without CORS configuration: the answer is hidden from the script.
        assert r["other_bucket"] == "blocked:TypeError"
    finally:
        s3.delete_object(Bucket=other, Key="k")
        s3.delete_bucket(Bucket=other)
