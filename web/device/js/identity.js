/**
 * The page's device identity, kept in localStorage so the server sees the same device across
 * reloads: a locally administered MAC-style Device-Id and a UUID Client-Id, as the firmware sends.
 */

/** @param {number} n */
function randomBytes(n) {
  const b = new Uint8Array(n);
  crypto.getRandomValues(b);
  return b;
}

function randomMac() {
  const b = randomBytes(6);
  // Locally administered, unicast: cannot collide with a real board's MAC.
  b[0] = ((b[0] ?? 0) & 0xfc) | 0x02;
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(':');
}

function randomUuid() {
  // crypto.randomUUID exists only in secure contexts; a LAN http page is not one.
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = randomBytes(16);
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * @param {string} key
 * @param {() => string} make
 */
function stored(key, make) {
  try {
    const v = localStorage.getItem(key);
    if (v) return v;
    const n = make();
    localStorage.setItem(key, n);
    return n;
  } catch {
    return make();
  }
}

/** @returns {{ deviceId: string, clientId: string }} */
export function loadIdentity() {
  return { deviceId: stored('xiaozhi.deviceId', randomMac), clientId: stored('xiaozhi.clientId', randomUuid) };
}

/**
 * @param {string} key
 * @param {string} value
 */
export function saveSetting(key, value) {
  try {
    localStorage.setItem(`xiaozhi.${key}`, value);
  } catch {
    // private mode: settings last for this page only
  }
}

/**
 * @param {string} key
 * @param {string} fallback
 */
export function loadSetting(key, fallback) {
  try {
    return localStorage.getItem(`xiaozhi.${key}`) ?? fallback;
  } catch {
    return fallback;
  }
}
