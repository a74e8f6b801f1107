package dev.throttlegovernor.jmeter;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A concurrency gate for JMeter 5.x governed by throttle-governor's pull
 * control (docs/tools/jmeter.md). JDK only: no JMeter class is referenced, so
 * the same jar works in any JMeter 5.x (lib/ext, or -Juser.classpath=) and in
 * jmeter-java-dsl.
 *
 * <p>At most {@code offer} samples are in flight from this JVM: a JSR223
 * PreProcessor calls {@link #acquire()} before each gated sample (blocking
 * while the gate is full), and a JSR223 Listener calls {@link #done(boolean)}
 * after it, which frees the slot and counts the attempt (and the failure,
 * after assertions ran). A daemon thread asks for the offer and then waits
 * on the controller for the next one ({@code If-None-Match} and
 * {@code ?wait=5s}): a new offer, a {@code Down} above all, applies the moment
 * it is published, not up to a poll interval later (at a wall that rejects in
 * a millisecond, each worker over it fails an attempt every millisecond or two
 * until then). A controller that answers at once (no waiting) is asked once a
 * second. The last answer is kept while the controller does not answer, and
 * the gate opens at 1 until the first answer. The counters are served as
 * Prometheus text on {@code throttle.metrics} (default 127.0.0.1:9466) for a
 * {@code kind = "prometheus"} signal.
 *
 * <p>JMeter properties (-Jname=value): {@code throttle.offer_url} (required),
 * {@code throttle.client} (default "jmeter"), {@code throttle.token} (a bearer
 * token, when the controller asks for one), {@code throttle.metrics}
 * (host:port, or "off").
 */
public final class ThrottleGate {
  private static ThrottleGate shared;

  /** The JVM's gate, created from JMeter's properties on first use. */
  public static synchronized ThrottleGate shared(Properties props) {
    if (shared == null) {
      String url = props.getProperty("throttle.offer_url", "").trim();
      if (url.isEmpty()) {
        throw new IllegalStateException("ThrottleGate: set -Jthrottle.offer_url=http://HOST:PORT/api/v1/targets/NAME/offer");
      }
      shared = new ThrottleGate(
          url,
          props.getProperty("throttle.client", "jmeter"),
          props.getProperty("throttle.token", ""),
          props.getProperty("throttle.metrics", "127.0.0.1:9466"));
    }
    return shared;
  }

  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  private final URI ask;
  private final String token;
  private volatile double offer = 1.0;
  private int inFlight; // guarded by this
  private final ThreadLocal<Boolean> held = new ThreadLocal<>();
  private final AtomicLong attempts = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();

  public ThrottleGate(String offerUrl, String client, String token, String metrics) {
    String sep = offerUrl.contains("?") ? "&" : "?";
    ask = URI.create(offerUrl + sep + "client=" + URLEncoder.encode(client, StandardCharsets.UTF_8)
        + "&wait=" + WAIT_SECONDS + "s");
    this.token = token;
    Thread poller = new Thread(this::poll, "throttle-gate-offer");
    poller.setDaemon(true);
    poller.start();
    if (!metrics.isEmpty() && !metrics.equals("off")) {
      serve(metrics);
    }
  }

  /** Waits until fewer than the offer's samples are in flight, then takes a slot. */
  public void acquire() {
    if (held.get() != null) {
      return; // this thread already holds its slot
    }
    synchronized (this) {
      while (inFlight >= (long) Math.floor(offer)) {
        try {
          wait(250);
        } catch (InterruptedException e) { // the test is stopping
          Thread.currentThread().interrupt();
          return;
        }
      }
      inFlight++;
    }
    held.set(Boolean.TRUE);
  }

  /** After a gated sample: frees the slot and counts the attempt (a failure unless ok). */
  public void done(boolean ok) {
    if (held.get() == null) {
      return; // not gated (e.g. a transaction controller's parent sample)
    }
    held.remove();
    attempts.incrementAndGet();
    if (!ok) {
      failures.incrementAndGet();
    }
    synchronized (this) {
      inFlight--;
      notifyAll();
    }
  }

  /** The offer in effect. */
  public double offer() {
    return offer;
  }

  /** How long each ask waits on the controller for a new offer. */
  static final int WAIT_SECONDS = 5;

  private void poll() {
    String etag = null;
    while (true) {
      long started = System.nanoTime();
      int status = -1;
      try {
        HttpRequest.Builder b = HttpRequest.newBuilder(ask)
            .timeout(Duration.ofSeconds(WAIT_SECONDS + 5));
        if (!token.isEmpty()) {
          b.header("Authorization", "Bearer " + token);
        }
        if (etag != null) {
          b.header("If-None-Match", etag);
        }
        HttpResponse<String> res = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
        status = res.statusCode();
        if (status == 200) {
          double n = Double.parseDouble(res.body().trim());
          if (Double.isFinite(n) && n >= 0) {
            offer = n;
            synchronized (this) {
              notifyAll();
            }
          }
          etag = res.headers().firstValue("ETag").orElse(null);
        } else if (status != 304) {
          etag = null; // 503 before the first offer, 401, 404: ask afresh
        }
      } catch (IOException | RuntimeException e) {
        etag = null; // keep the last offer until the controller answers
      } catch (InterruptedException e) {
        return;
      }
      long tookMs = (System.nanoTime() - started) / 1_000_000;
      // After a new offer, or a wait the controller held, ask again at once:
      // that ask waits on the controller. Otherwise (an error, or a 304
      // answered at once by a controller that does not wait), in a second.
      boolean again = (status == 200 && etag != null) || (status == 304 && tookMs >= 500);
      if (!again) {
        try {
          Thread.sleep(1000);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }

  private void serve(String hostPort) {
    int colon = hostPort.lastIndexOf(':');
    InetSocketAddress at = new InetSocketAddress(
        hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    try {
      HttpServer server = HttpServer.create(at, 0);
      server.createContext("/metrics", ex -> {
        int busy;
        synchronized (this) {
          busy = inFlight;
        }
        String body = "# HELP throttle_gate_attempts_total Gated samples resolved (every attempt, failures included).\n"
            + "# TYPE throttle_gate_attempts_total counter\n"
            + "throttle_gate_attempts_total " + attempts.get() + "\n"
            + "# HELP throttle_gate_failures_total Gated samples that failed (after assertions).\n"
            + "# TYPE throttle_gate_failures_total counter\n"
            + "throttle_gate_failures_total " + failures.get() + "\n"
            + "# HELP throttle_gate_offer The offer the gate applies.\n"
            + "# TYPE throttle_gate_offer gauge\n"
            + "throttle_gate_offer " + offer + "\n"
            + "# HELP throttle_gate_in_flight Gated samples in flight.\n"
            + "# TYPE throttle_gate_in_flight gauge\n"
            + "throttle_gate_in_flight " + busy + "\n";
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        ex.sendResponseHeaders(200, bytes.length);
        try (OutputStream out = ex.getResponseBody()) {
          out.write(bytes);
        }
      });
      server.start();
      // The server's dispatcher is not a daemon thread: stop it when JMeter exits.
      Runtime.getRuntime().addShutdownHook(new Thread(() -> server.stop(0)));
    } catch (IOException e) {
      throw new IllegalStateException("ThrottleGate: cannot serve /metrics on " + hostPort + ": " + e, e);
    }
  }
}
