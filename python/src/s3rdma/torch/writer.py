"""S3Writer: a write-only binary stream that becomes one object on close (what
S3Checkpoint.writer returns and torch.save writes to).

Writes are copied into part_size buffers of registered memory (allocate_buffer, so
no transfer registers anything). A body that stays within one part is stored by one
PUT on close. Once a part fills, a multipart upload starts and each full part goes
to a pool of ``parts_in_flight`` uploader threads, each sending its part with its own
number (the server hashes parts in flight on as many cores), while the caller keeps
writing into the next buffer. Memory is bounded by a ring of parts_in_flight + 1
buffers: when all of them are in flight, write() waits for one to come back.
Closing uploads the rest and completes the upload; a failed part, or leaving a
``with`` block by an exception, aborts it (after every part in flight has ended), so
a failed save never leaves an object or an open upload behind.
"""
import io
import queue
import threading
from typing import Any, List, Optional, Tuple

from ..client import Client
from ._client import alloc

_Job = Optional[Tuple[int, memoryview, memoryview]]  # (number, data, its ring buffer)


class S3Writer(io.BufferedIOBase):
    def __init__(self, client: Client, bucket: str, key: str, part_size: Optional[int] = None,
                 parts_in_flight: Optional[int] = None, storage_class: Optional[str] = None):
        """storage_class: the object's x-amz-storage-class (put_object's)."""
        super().__init__()
        self._client, self.bucket, self.key = client, bucket, key
        self._storage_class = storage_class
        self._part_size = part_size or client.part_size
        self._in_flight = parts_in_flight or client.parts_in_flight
        if self._in_flight < 1:
            raise ValueError("s3rdma.torch: parts_in_flight must be at least 1")
        self._part = alloc(client, self._part_size)
        self._fill = 0
        self._written = 0
        self._parts = 0  # parts shipped so far (the last one's number)
        self._up: Any = None
        self._jobs: "queue.Queue[_Job]" = queue.Queue()
        self._ring: "queue.Queue[memoryview]" = queue.Queue()  # buffers back from uploads
        self._ring_size = 1  # buffers allocated (at most parts_in_flight + 1)
        self._threads: List[threading.Thread] = []
        self._error: List[BaseException] = []

    def writable(self) -> bool:
        return not self.closed

    def flush(self) -> None:
        """Nothing to do (as s3torchconnector's, also once closed): bytes written are
        sent as parts fill and on close()."""

    def tell(self) -> int:
        return self._written

    def write(self, data) -> int:
        if self.closed:
            raise ValueError("s3rdma.torch: write to a closed S3Writer")
        self._raise_upload_error()
        src = memoryview(data).cast("B")
        n = len(src)
        while len(src):
            k = min(len(src), self._part_size - self._fill)
            self._part[self._fill:self._fill + k] = src[:k]
            self._fill += k
            src = src[k:]
            if self._fill == self._part_size and len(src):
                self._ship()
        self._written += n
        return n

    def _ship(self) -> None:
        """Hands the full current part to the uploaders and continues in a free ring
        buffer (the last part is never shipped here: close() sends it)."""
        if self._up is None:
            self._up = self._client._native.multipart(self.bucket, self.key, None, None, None,
                                                      False, self._storage_class)
            for i in range(self._in_flight):
                t = threading.Thread(target=self._upload_loop, daemon=True,
                                     name=f"s3rdma-writer-{i}")
                t.start()
                self._threads.append(t)
        self._send(self._part)
        if self._ring_size <= self._in_flight:
            self._ring_size += 1
            self._part = alloc(self._client, self._part_size)
        else:
            self._part = self._ring.get()  # an upload ends (failed ones too)
        self._fill = 0
        self._raise_upload_error()

    def _send(self, buf: memoryview) -> None:
        self._parts += 1
        self._jobs.put((self._parts, buf[:self._fill], buf))

    def _upload_loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            number, data, buf = job
            try:
                if not self._error:
                    self._up.part(data, number)
            except BaseException as e:  # reported to the writing thread
                self._error.append(e)
            finally:
                self._ring.put(buf)

    def _raise_upload_error(self) -> None:
        if self._error:
            raise self._error[0]

    def close(self) -> None:
        """Uploads what is left and commits the object (idempotent)."""
        if self.closed:
            return
        try:
            if self._up is None:
                self._client.put_object(self.bucket, self.key, self._part[:self._fill],
                                        storage_class=self._storage_class)
            else:
                self._send(self._part)
                self._stop_uploaders()
                self._raise_upload_error()
                self._up.complete()
        except BaseException:
            self._abort()
            raise
        finally:
            self._part = None
            super().close()

    def _stop_uploaders(self) -> None:
        """Waits for every queued part to be sent (or skipped after an error)."""
        for _ in self._threads:
            self._jobs.put(None)
        for t in self._threads:
            t.join()
        self._threads = []

    def _abort(self) -> None:
        if self._up is not None:
            self._error.append(RuntimeError("aborted"))  # queued parts are skipped
            self._stop_uploaders()
            self._up.abort()

    def __exit__(self, exc_type, *rest) -> None:
        if exc_type is not None and not self.closed:
            self._abort()
            self._part = None
            super().close()
            return
        self.close()
