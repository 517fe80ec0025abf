// The AWS SDK for JavaScript v3, as an application uses it, against s3rdmad:
// every step checks what S3 answers. Run by tests/integration/test_js_sdk.py with
// S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and BUCKET (not yet created).
// Prints one line per step; exits 1 when any step failed.
import * as S3 from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";

const endpoint = process.env.S3_ENDPOINT;
const B = process.env.BUCKET;
const s3 = new S3.S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, maxAttempts: 1 });
const send = (op, input) => s3.send(new S3[op + "Command"](input));
const bytes = (n, seed) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) & 255));
const md5 = (b) => createHash("md5").update(b).digest("hex");
async function errorOf(p) {
  try { await p; } catch (e) { return [e.name, e.$metadata?.httpStatusCode]; }
  return ["no error", 0];
}

let failed = 0;
async function step(name, fn) {
  try { await fn(); console.log("ok  ", name); }
  catch (e) { failed++; console.log("FAIL", name, "-", e.name, e.message); }
}

const small = bytes(100_000, 7), big = bytes((17 << 20) + 123, 3);
await step("CreateBucket, HeadBucket", async () => {
  await send("CreateBucket", { Bucket: B });
  assert.equal((await send("HeadBucket", { Bucket: B })).$metadata.httpStatusCode, 200);
});
await step("PutObject with the SDK's default checksum; GetObject validates it", async () => {
  const put = await send("PutObject", { Bucket: B, Key: "small", Body: small });
  assert.equal(put.ETag, `"${md5(small)}"`);
  const got = await send("GetObject", { Bucket: B, Key: "small" });
  assert.deepEqual(Buffer.from(await got.Body.transformToByteArray()), small);
});
for (const alg of ["CRC32", "CRC32C", "SHA1", "SHA256", "CRC64NVME"]) {
  await step(`PutObject ChecksumAlgorithm ${alg}, HEAD and GET return it`, async () => {
    const put = await send("PutObject", { Bucket: B, Key: `ck-${alg}`, Body: small, ChecksumAlgorithm: alg });
    const head = await send("HeadObject", { Bucket: B, Key: `ck-${alg}`, ChecksumMode: "ENABLED" });
    assert.equal(head[`Checksum${alg}`], put[`Checksum${alg}`]);
    const got = await send("GetObject", { Bucket: B, Key: `ck-${alg}`, ChecksumMode: "ENABLED" });
    assert.deepEqual(Buffer.from(await got.Body.transformToByteArray()), small);
  });
}
await step("ranged GETs of an object stored with a checksum", async () => {
  for (const [range, a, b] of [["bytes=10-99", 10, 100], ["bytes=-5", small.length - 5, small.length]]) {
    const got = await send("GetObject", { Bucket: B, Key: "ck-CRC32", Range: range });
    assert.equal(got.$metadata.httpStatusCode, 206);
    assert.deepEqual(Buffer.from(await got.Body.transformToByteArray()), small.subarray(a, b));
  }
});
await step("PutObject from a stream with its length; metadata and headers", async () => {
  await send("PutObject", { Bucket: B, Key: "stream", Body: Readable.from([small.subarray(0, 60000), small.subarray(60000)]),
    ContentLength: small.length, ContentType: "text/x-test", CacheControl: "max-age=5", Metadata: { Foo: "bar" } });
  const h = await send("HeadObject", { Bucket: B, Key: "stream" });
  assert.equal(h.ContentLength, small.length);
  assert.equal(h.ContentType, "text/x-test");
  assert.equal(h.CacheControl, "max-age=5");
  assert.deepEqual(h.Metadata, { foo: "bar" });
});
await step("conditional requests: 304, 412, If-None-Match: * on a write", async () => {
  const h = await send("HeadObject", { Bucket: B, Key: "small" });
  const [, status304] = await errorOf(send("GetObject", { Bucket: B, Key: "small", IfNoneMatch: h.ETag }));
  assert.equal(status304, 304);
  assert.deepEqual(await errorOf(send("GetObject", { Bucket: B, Key: "small", IfMatch: '"0123"' })), ["PreconditionFailed", 412]);
  assert.deepEqual(await errorOf(send("PutObject", { Bucket: B, Key: "small", Body: "x", IfNoneMatch: "*" })), ["PreconditionFailed", 412]);
});
await step("CopyObject (COPY and REPLACE), ListObjectsV2 paged, ListObjects with a delimiter", async () => {
  await send("CopyObject", { Bucket: B, Key: "dir/copy", CopySource: `${B}/stream` });
  assert.equal((await send("HeadObject", { Bucket: B, Key: "dir/copy" })).ContentType, "text/x-test");
  await send("CopyObject", { Bucket: B, Key: "dir/copy2", CopySource: `${B}/stream`, MetadataDirective: "REPLACE", ContentType: "x/y", Metadata: { a: "b" } });
  const h = await send("HeadObject", { Bucket: B, Key: "dir/copy2" });
  assert.equal(h.ContentType, "x/y");
  assert.deepEqual(h.Metadata, { a: "b" });
  let keys = [], token;
  do {
    const r = await send("ListObjectsV2", { Bucket: B, MaxKeys: 3, ContinuationToken: token });
    keys.push(...(r.Contents || []).map((c) => c.Key));
    token = r.NextContinuationToken;
  } while (token);
  assert.deepEqual(keys, [...keys].sort());
  assert.ok(keys.includes("dir/copy2") && keys.includes("small"));
  const v1 = await send("ListObjects", { Bucket: B, Delimiter: "/" });
  assert.deepEqual(v1.CommonPrefixes.map((p) => p.Prefix), ["dir/"]);
});
await step("lib-storage Upload of 17 MiB in 5 MiB parts, then GET compares", async () => {
  const r = await new Upload({ client: s3, params: { Bucket: B, Key: "big", Body: big }, partSize: 5 << 20, queueSize: 3 }).done();
  assert.match(r.ETag, /-4"$/);
  const got = await send("GetObject", { Bucket: B, Key: "big" });
  assert.equal(md5(Buffer.from(await got.Body.transformToByteArray())), md5(big));
});
await step("lib-storage Upload of a stream with CRC32 part checksums", async () => {
  const r = await new Upload({ client: s3, params: { Bucket: B, Key: "big-crc", ChecksumAlgorithm: "CRC32",
    Body: Readable.from([big.subarray(0, 6 << 20), big.subarray(6 << 20, 12 << 20)]) }, partSize: 5 << 20 }).done();
  assert.match(r.ChecksumCRC32, /-3$/);
  const got = await send("GetObject", { Bucket: B, Key: "big-crc", PartNumber: 2 });
  assert.equal(got.PartsCount, 3);
  assert.deepEqual(Buffer.from(await got.Body.transformToByteArray()), big.subarray(5 << 20, 10 << 20));
});
await step("multipart by hand: full-object CRC32, UploadPartCopy, ListParts, ListMultipartUploads, Abort", async () => {
  const c = await send("CreateMultipartUpload", { Bucket: B, Key: "mpu", ChecksumAlgorithm: "CRC32", ChecksumType: "FULL_OBJECT" });
  const p1 = await send("UploadPart", { Bucket: B, Key: "mpu", UploadId: c.UploadId, PartNumber: 1, Body: big.subarray(0, 5 << 20), ChecksumAlgorithm: "CRC32" });
  const p2 = await send("UploadPart", { Bucket: B, Key: "mpu", UploadId: c.UploadId, PartNumber: 2, Body: small, ChecksumAlgorithm: "CRC32" });
  assert.equal((await send("ListParts", { Bucket: B, Key: "mpu", UploadId: c.UploadId })).Parts.length, 2);
  const done = await send("CompleteMultipartUpload", { Bucket: B, Key: "mpu", UploadId: c.UploadId, MultipartUpload: { Parts: [
    { PartNumber: 1, ETag: p1.ETag, ChecksumCRC32: p1.ChecksumCRC32 }, { PartNumber: 2, ETag: p2.ETag, ChecksumCRC32: p2.ChecksumCRC32 }] } });
  assert.equal(done.ChecksumType, "FULL_OBJECT");
  const c2 = await send("CreateMultipartUpload", { Bucket: B, Key: "mpu-copy" });
  const up = await send("ListMultipartUploads", { Bucket: B });
  assert.deepEqual(up.Uploads.map((u) => u.Key), ["mpu-copy"]);
  const pc = await send("UploadPartCopy", { Bucket: B, Key: "mpu-copy", UploadId: c2.UploadId, PartNumber: 1, CopySource: `${B}/big`, CopySourceRange: "bytes=0-5242879" });
  assert.ok(pc.CopyPartResult.ETag);
  await send("AbortMultipartUpload", { Bucket: B, Key: "mpu-copy", UploadId: c2.UploadId });
  assert.equal((await send("ListMultipartUploads", { Bucket: B })).Uploads, undefined);
});
await step("presigned GET and PUT with fetch()", async () => {
  const put = await getSignedUrl(s3, new S3.PutObjectCommand({ Bucket: B, Key: "presigned" }), { expiresIn: 60 });
  assert.equal((await fetch(put, { method: "PUT", body: "via url" })).status, 200);
  const get = await getSignedUrl(s3, new S3.GetObjectCommand({ Bucket: B, Key: "presigned" }), { expiresIn: 60 });
  const r = await fetch(get);
  assert.equal(r.status, 200);
  assert.equal(await r.text(), "via url");
});
await step("tagging, GetObjectAttributes, bucket configurations", async () => {
  await send("PutObjectTagging", { Bucket: B, Key: "small", Tagging: { TagSet: [{ Key: "k", Value: "v" }] } });
  assert.deepEqual((await send("GetObjectTagging", { Bucket: B, Key: "small" })).TagSet, [{ Key: "k", Value: "v" }]);
  const a = await send("GetObjectAttributes", { Bucket: B, Key: "ck-CRC32C", ObjectAttributes: ["ETag", "Checksum", "ObjectSize"] });
  assert.equal(a.ObjectSize, small.length);
  assert.ok(a.Checksum.ChecksumCRC32C);
  await send("PutBucketCors", { Bucket: B, CORSConfiguration: { CORSRules: [{ AllowedMethods: ["GET"], AllowedOrigins: ["*"] }] } });
  assert.equal((await send("GetBucketCors", { Bucket: B })).CORSRules.length, 1);
  await send("PutBucketLifecycleConfiguration", { Bucket: B, LifecycleConfiguration: { Rules: [{ ID: "r", Status: "Enabled", Filter: { Prefix: "tmp/" }, Expiration: { Days: 1 } }] } });
  assert.equal((await send("GetBucketLifecycleConfiguration", { Bucket: B })).Rules[0].ID, "r");
  await send("PutBucketTagging", { Bucket: B, Tagging: { TagSet: [{ Key: "team", Value: "ml" }] } });
  assert.equal((await send("GetBucketTagging", { Bucket: B })).TagSet[0].Value, "ml");
});
await step("versioning: versions and a delete marker", async () => {
  await send("PutBucketVersioning", { Bucket: B, VersioningConfiguration: { Status: "Enabled" } });
  const v1 = await send("PutObject", { Bucket: B, Key: "v", Body: "one" });
  await send("PutObject", { Bucket: B, Key: "v", Body: "two" });
  await send("DeleteObject", { Bucket: B, Key: "v" });
  const l = await send("ListObjectVersions", { Bucket: B, Prefix: "v" });
  assert.equal(l.Versions.length, 2);
  assert.equal(l.DeleteMarkers.length, 1);
  const old = await send("GetObject", { Bucket: B, Key: "v", VersionId: v1.VersionId });
  assert.equal(await old.Body.transformToString(), "one");
});
await step("DeleteObjects of every version, DeleteBucket", async () => {
  const l = await send("ListObjectVersions", { Bucket: B });
  const all = [...(l.Versions || []), ...(l.DeleteMarkers || [])].map((v) => ({ Key: v.Key, VersionId: v.VersionId }));
  const r = await send("DeleteObjects", { Bucket: B, Delete: { Objects: all } });
  assert.equal(r.Deleted.length, all.length);
  await send("DeleteBucket", { Bucket: B });
  assert.deepEqual(await errorOf(send("HeadBucket", { Bucket: B })), ["NotFound", 404]);
});
process.exit(failed ? 1 : 0);
