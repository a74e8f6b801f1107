// A k6 script governed by throttle-governor's pull control (k6 1.x and 2.x).
//
//   k6 run --address 127.0.0.1:6565 \
//     -e OFFER_URL=http://127.0.0.1:9464/api/v1/targets/k6/offer \
//     -e TARGET_URL=http://127.0.0.1:8080/ k6-pull.js
//
// Every VU runs, but a VU whose number is above the offer idles briefly and
// skips its iteration: the offer is the number of VUs that send load.
import http from 'k6/http';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';

// The governor reads these two (signal.attempts, signal.failures), so that
// the polls of the offer below never count as attempts.
const attempts = new Counter('governed_attempts');
const failures = new Counter('governed_failures');

export const options = {
  scenarios: {
    governed: {
      executor: 'constant-vus',
      vus: Number(__ENV.VUS || 40), // the ceiling: the most VUs that may run
      duration: __ENV.DURATION || '10m',
    },
  },
};

// ---- the gate: copy from here ----
const OFFER_URL = __ENV.OFFER_URL;
const OFFER_TOKEN = __ENV.OFFER_TOKEN; // when [server.pull] asks for a token
let offer = 1; // until the first answer: one VU (assume the most fragile target)
let askedAt = -Infinity; // per VU; every iteration of the VU shares this cache

function offered() {
  const now = Date.now();
  if (now - askedAt >= 1000) { // at most once a second per VU
    askedAt = now;
    const res = http.get(`${OFFER_URL}?client=vu-${exec.vu.idInTest}`, {
      headers: OFFER_TOKEN ? { Authorization: `Bearer ${OFFER_TOKEN}` } : {},
      timeout: '2s',
      tags: { name: 'throttle-offer' },
      responseCallback: http.expectedStatuses(200),
    });
    const n = parseFloat(res.body);
    if (res.status === 200 && Number.isFinite(n)) offer = n; // else keep the last one
  }
  return exec.vu.idInTest <= offer;
}
// ---- to here ----

export default function () {
  if (!offered()) {
    sleep(0.25); // above the offer: idle, and skip this iteration
    return;
  }
  const res = http.get(__ENV.TARGET_URL);
  attempts.add(1);
  if (res.status >= 400 || res.error_code) failures.add(1);
}
