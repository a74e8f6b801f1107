"""Gate a Python load script by a throttle-governor offer (no dependencies).

    offer = Offer("http://127.0.0.1:9464/api/v1/targets/checkout/offer", client="shard-1")
    # concurrency: worker n (1-based) works only while n <= the offer
    if offer.allows(n): do_one_request()
    # rate: one permit per request, at the offer's rate per second
    bucket = TokenBucket(offer)
    bucket.take(); do_one_request()
"""
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


class Offer:
    """The offer, kept current by a daemon thread (thread-safe).

    The thread asks for the offer, then waits on the controller for each
    next one (`If-None-Match` and `?wait=`): a new offer, a Down above all,
    applies the moment it is published, not up to a poll interval later. A
    controller that answers at once (no waiting) is asked every `every`
    seconds. The last offer is kept while the controller does not answer.
    """

    def __init__(self, url, client="python", token=None, every=1.0, start=1.0, wait=5):
        sep = "&" if "?" in url else "?"
        self.url = url + sep + urllib.parse.urlencode({"client": client, "wait": f"{wait}s"})
        self.headers = {"Authorization": "Bearer " + token} if token else {}
        self.every, self.wait, self.value = every, wait, float(start)
        threading.Thread(target=self._watch, name="throttle-offer", daemon=True).start()

    def _ask(self, etag):
        """One ask: (status, etag); status -1 on any error."""
        headers = dict(self.headers)
        if etag:
            headers["If-None-Match"] = etag
        try:
            req = urllib.request.Request(self.url, headers=headers)
            with urllib.request.urlopen(req, timeout=self.wait + 5) as res:
                self.value = float(res.read().decode().strip())
                return res.status, res.headers.get("ETag")
        except urllib.error.HTTPError as e:  # 304 arrives as an HTTPError
            return e.code, etag if e.code == 304 else None
        except (OSError, ValueError):
            return -1, None  # keep the last offer until the controller answers

    def _watch(self):
        etag = None
        while True:
            began = time.monotonic()
            status, etag = self._ask(etag)
            # After a new offer, or a wait the controller held, ask again at
            # once: that ask waits on the controller. Otherwise (an error, or
            # a 304 answered at once by a controller that does not wait),
            # after `every` seconds.
            held = time.monotonic() - began >= 0.5
            if not ((status == 200 and etag) or (status == 304 and held)):
                time.sleep(self.every)

    def get(self):
        return self.value

    def allows(self, worker):
        return worker <= self.get()


class TokenBucket:
    """Permits at the offer's rate per second; bursts of at most a tenth of a second."""

    def __init__(self, offer):
        self.offer, self.tokens, self.at = offer, 0.0, time.monotonic()
        self.lock = threading.Lock()

    def take(self):
        while True:
            with self.lock:
                rate, now = max(self.offer.get(), 0.0), time.monotonic()
                burst = max(1.0, rate / 10)
                self.tokens = min(burst, self.tokens + (now - self.at) * rate)
                self.at = now
                if self.tokens >= 1.0:
                    self.tokens -= 1.0
                    return
                wait = (1.0 - self.tokens) / rate if rate > 0 else 0.1
            time.sleep(min(wait, 0.1))
