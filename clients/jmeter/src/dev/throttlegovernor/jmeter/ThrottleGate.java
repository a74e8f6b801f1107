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
 * after assertions ran). The offer is asked for once a second by a daemon
 * thread; the last answer is kept while the controller does not answer, and
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
  private final HttpRequest ask;
  private volatile double offer = 1.0;
  private int inFlight; // guarded by this
  private final ThreadLocal<Boolean> held = new ThreadLocal<>();
  private final AtomicLong attempts = new AtomicLong();
  private final AtomicLong failures = new AtomicLong();

  public ThrottleGate(String offerUrl, String client, String token, String metrics) {
    String sep = offerUrl.contains("?") ? "&" : "?";
    HttpRequest.Builder b = HttpRequest.newBuilder(
            URI.create(offerUrl + sep + "client=" + URLEncoder.encode(client, StandardCharsets.UTF_8)))
        .timeout(Duration.ofSeconds(2));
    if (!token.isEmpty()) {
      b.header("Authorization", "Bearer " + token);
    }
    ask = b.build();
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

  private void poll() {
    while (true) {
      try {
        HttpResponse<String> res = http.send(ask, HttpResponse.BodyHandlers.ofString());
        if (res.statusCode() == 200) {
          double n = Double.parseDouble(res.body().trim());
          if (Double.isFinite(n) && n >= 0) {
            offer = n;
            synchronized (this) {
              notifyAll();
            }
          }
        }
      } catch (IOException | RuntimeException e) {
        // keep the last offer until the controller answers
      } catch (InterruptedException e) {
        return;
      }
      try {
        Thread.sleep(1000);
      } catch (InterruptedException e) {
        return;
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
