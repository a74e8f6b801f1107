"""A minimal Locust test for deploy/compose.locust.yaml: every user GETs the
target's "/" as fast as it can. Replace it with your own locustfile; the
controller needs nothing from it."""

from locust import HttpUser, constant, task


class Visitor(HttpUser):
    wait_time = constant(0)

    @task
    def index(self) -> None:
        self.client.get("/")
