// The admin API from the console: same-origin fetch with the session cookie, JSON both ways.
// A 401 means the sign-in expired: listeners of `onSignedOut` show the sign-in form again.

const signedOutListeners = [];

/** Called when the server no longer accepts this browser's session. */
export function onSignedOut(fn) {
  signedOutListeners.push(fn);
}

export class ApiError extends Error {
  constructor(status, message, field) {
    super(message);
    this.status = status;
    this.field = field;
  }
}

/** One request to `/api/admin{path}`; resolves to the parsed answer (null for 204). */
export async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(`/api/admin${path}`, init);
  if (res.status === 204) return null;
  const data = await res.json().catch(() => ({ error: `HTTP ${res.status}` }));
  if (!res.ok) {
    if (res.status === 401 && path !== '/session') for (const fn of signedOutListeners) fn();
    // A refusal by origin says what to set (`fix`): shown with the message.
    const message = data.error ?? `HTTP ${res.status}`;
    throw new ApiError(res.status, typeof data.fix === 'string' ? `${message}: ${data.fix}` : message, data.field);
  }
  return data;
}

export const signIn = (token) => api('POST', '/session', { token });
export const signOut = () => api('DELETE', '/session');
export const whoAmI = () => api('GET', '/session');
export const listDevices = () => api('GET', '/devices').then((r) => r.devices);
export const bindDevice = (code, agent, alias) =>
  api('POST', '/devices/bind', { code, ...(agent ? { agent } : {}), ...(alias ? { alias } : {}) });
export const updateDevice = (deviceId, patch) => api('PATCH', `/devices/${encodeURIComponent(deviceId)}`, patch);
export const revokeDevice = (deviceId) => api('DELETE', `/devices/${encodeURIComponent(deviceId)}`);
export const deviceHistory = (deviceId) => api('GET', `/devices/${encodeURIComponent(deviceId)}/history`);
export const deviceMemory = (deviceId) => api('GET', `/devices/${encodeURIComponent(deviceId)}/memory`);
export const deleteDeviceMemory = (deviceId) => api('DELETE', `/devices/${encodeURIComponent(deviceId)}/memory`);
/** Gives one Client-Id's memory (null: the unassigned rows) to another Client-Id of the device. */
export const moveDeviceMemory = (deviceId, from, to) =>
  api('POST', `/devices/${encodeURIComponent(deviceId)}/memory/move`, { from, to });
export const deviceReminders = (deviceId) => api('GET', `/devices/${encodeURIComponent(deviceId)}/reminders`);
export const cancelDeviceReminder = (deviceId, id) =>
  api('DELETE', `/devices/${encodeURIComponent(deviceId)}/reminders/${id}`);
/** Speaks a text on the device; resolves to the outcome, also when it was queued or refused. */
export async function sayOnDevice(deviceId, text) {
  try {
    return await api('POST', `/devices/${encodeURIComponent(deviceId)}/say`, { text });
  } catch (err) {
    // Refusals (404 unknown, 409 offline, 429 rate) carry the outcome: only the status is known here.
    if (err instanceof ApiError && [404, 409, 429].includes(err.status))
      return { status: 'refused', reason: { 404: 'unknown_device', 409: 'offline', 429: 'rate_limited' }[err.status] };
    throw err;
  }
}
export const listAgents = () => api('GET', '/agents').then((r) => r.agents);
export const createAgent = (name, settings) => api('POST', '/agents', { name, settings });
export const updateAgent = (name, settings) => api('PATCH', `/agents/${encodeURIComponent(name)}`, { settings });
export const deleteAgent = (name) => api('DELETE', `/agents/${encodeURIComponent(name)}`);
export const listSessions = () => api('GET', '/sessions').then((r) => r.sessions);
export const getMcpEndpoint = (agent) => api('GET', `/agents/${encodeURIComponent(agent)}/mcp-endpoint`);
export const createMcpEndpoint = (agent) => api('POST', `/agents/${encodeURIComponent(agent)}/mcp-endpoint`);
export const revokeMcpEndpoint = (agent) => api('DELETE', `/agents/${encodeURIComponent(agent)}/mcp-endpoint`);
export const visionOverview = () => api('GET', '/vision');
export const lastPhoto = (deviceId) => api('GET', `/devices/${encodeURIComponent(deviceId)}/vision/last`);
export const deleteLastPhoto = (deviceId) => api('DELETE', `/devices/${encodeURIComponent(deviceId)}/vision/last`);
