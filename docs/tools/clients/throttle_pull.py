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
import urllib.parse
import urllib.request


class Offer:
    """The offer, asked for at most once per `every` seconds (thread-safe)."""

    def __init__(self, url, client="python", token=None, every=1.0, start=1.0):
        self.url = url + "?" + urllib.parse.urlencode({"client": client})
        self.headers = {"Authorization": "Bearer " + token} if token else {}
        self.every, self.value, self.asked = every, float(start), float("-inf")
        self.lock = threading.Lock()

    def get(self):
        with self.lock:
            if time.monotonic() - self.asked >= self.every:
                self.asked = time.monotonic()
                try:
                    req = urllib.request.Request(self.url, headers=self.headers)
                    with urllib.request.urlopen(req, timeout=2) as res:
                        self.value = float(res.read().decode().strip())
                except (OSError, ValueError):
                    pass  # keep the last offer until the controller answers
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
