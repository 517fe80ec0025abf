"""S3Writer: a write-only binary stream that becomes one object on close (what
S3Checkpoint.writer returns and torch.save writes to).

Writes are copied into part_size buffers of registered memory (allocate_buffer, so
no transfer registers anything). A body that stays within one part is stored by one
PUT on close. Once a part fills, a multipart upload starts and each full part is
handed to one uploader thread while the caller keeps writing into the next buffer,
so serialization and upload overlap (at most ``depth`` parts wait). Closing uploads
the rest and completes the upload; an error, or leaving a ``with`` block by an
exception, aborts it, so a failed save never leaves an object behind.
"""
import io
import queue
import threading
from typing import Any, List, Optional

from ..client import Client
from ._client import alloc


class S3Writer(io.BufferedIOBase):
    def __init__(self, client: Client, bucket: str, key: str, part_size: Optional[int] = None,
                 depth: int = 2):
        super().__init__()
        self._client, self.bucket, self.key = client, bucket, key
        self._part_size = part_size or client.part_size
        self._part = alloc(client, self._part_size)
        self._fill = 0
        self._written = 0
        self._up: Any = None
        self._queue: "queue.Queue[Optional[memoryview]]" = queue.Queue(depth)
        self._thread: Optional[threading.Thread] = None
        self._error: List[BaseException] = []

    def writable(self) -> bool:
        return True

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
        """Queues the full current part for upload and starts a fresh buffer (the
        last part is never shipped here: close() sends it)."""
        if self._up is None:
            self._up = self._client._native.multipart(self.bucket, self.key, None, None, None)
            self._thread = threading.Thread(target=self._upload_loop, daemon=True,
                                            name="s3rdma-writer")
            self._thread.start()
        self._queue.put(self._part)
        self._raise_upload_error()
        self._part = alloc(self._client, self._part_size)
        self._fill = 0

    def _upload_loop(self) -> None:
        while True:
            part = self._queue.get()
            if part is None:
                return
            if not self._error:
                try:
                    self._up.part(part)
                except BaseException as e:  # reported to the writing thread
                    self._error.append(e)

    def _raise_upload_error(self) -> None:
        if self._error:
            raise self._error[0]

    def close(self) -> None:
        """Uploads what is left and commits the object (idempotent)."""
        if self.closed:
            return
        try:
            if self._up is None:
                self._client.put_object(self.bucket, self.key, self._part[:self._fill])
            else:
                self._queue.put(self._part[:self._fill])
                self._finish_thread()
                self._raise_upload_error()
                self._up.complete()
        except BaseException:
            self._abort()
            raise
        finally:
            self._part = None
            super().close()

    def _finish_thread(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def _abort(self) -> None:
        if self._up is not None:
            self._error.append(RuntimeError("aborted"))
            self._finish_thread()
            self._up.abort()

    def __exit__(self, exc_type, *rest) -> None:
        if exc_type is not None and not self.closed:
            self._abort()
            self._part = None
            super().close()
            return
        self.close()
