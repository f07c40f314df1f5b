/**
 * @module The broker's connections per address, counted in two kinds. A connection is pending
 * from the moment it is accepted until its CONNECT is accepted; then it is authenticated. Only
 * authenticated ones count against the address's connection limit (`server.maxSessionsPerIp`),
 * so connections that never send CONNECT cannot lock the devices of their address out. Pending
 * ones are bounded apart: per address at most `maxPendingPerAddress`, a new one closing the
 * oldest (a device sends its CONNECT at once, a stranger's connection is the one that ages),
 * and each must be accepted within a deadline, shorter once half the address's pending places
 * are taken. Every timer belongs to a pending connection and ends with it, or with `close()`.
 */

/** What the gate closes: the outermost socket of a connection (TLS over TCP: the TLS one). */
export interface GatedConnection {
  destroy(): void;
}

export interface ConnectionGateOptions {
  /** Pending connections per address at most; one more closes the address's oldest pending one. */
  maxPendingPerAddress: number;
  /** Authenticated connections per address at most; 0: no limit. */
  maxAuthenticatedPerAddress: number;
  /** Time from accept to an accepted CONNECT. */
  connectTimeoutMs: number;
  /** The same while at least half the address's pending places are taken. */
  pressuredConnectTimeoutMs: number;
  /** A pending connection is being closed by the gate: a newer one took its place, or its deadline passed. */
  onClose(address: string, why: 'evicted' | 'deadline'): void;
}

/** One accepted connection, as the gate tracks it. */
export interface GateTicket {
  readonly address: string;
}

interface Ticket extends GateTicket {
  readonly conn: GatedConnection;
  readonly openedAt: number;
  state: 'pending' | 'authenticated' | 'released';
  deadline: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

interface AddressCounts {
  /** Oldest first (insertion order). */
  pending: Set<Ticket>;
  authenticated: number;
}

export class ConnectionGate {
  readonly #opts: ConnectionGateOptions;
  readonly #byAddress = new Map<string, AddressCounts>();

  constructor(opts: ConnectionGateOptions) {
    this.#opts = opts;
  }

  /** Pending connections of `address`. */
  pending(address: string): number {
    return this.#byAddress.get(address)?.pending.size ?? 0;
  }

  /** Authenticated connections of `address`. */
  authenticated(address: string): number {
    return this.#byAddress.get(address)?.authenticated ?? 0;
  }

  /** A connection was accepted: pending, with its deadline. May close the address's oldest pending one. */
  admit(conn: GatedConnection, address: string): GateTicket {
    let counts = this.#byAddress.get(address);
    if (!counts) this.#byAddress.set(address, (counts = { pending: new Set(), authenticated: 0 }));
    if (counts.pending.size >= this.#opts.maxPendingPerAddress) {
      const oldest = counts.pending.values().next().value;
      if (oldest) this.#expire(oldest, 'evicted');
    }
    const now = performance.now();
    const ticket: Ticket = { address, conn, openedAt: now, state: 'pending', deadline: Infinity, timer: undefined };
    counts.pending.add(ticket);
    this.#schedule(ticket, now + this.#opts.connectTimeoutMs);
    if (counts.pending.size >= Math.ceil(this.#opts.maxPendingPerAddress / 2)) {
      // Under pressure every pending connection of the address gets the shorter deadline,
      // counted from when it opened: a device has long sent its CONNECT by then.
      for (const t of counts.pending) this.#schedule(t, t.openedAt + this.#opts.pressuredConnectTimeoutMs);
    }
    return ticket;
  }

  /**
   * The connection's CONNECT is accepted: it stops being pending (`authenticated`). `full` (it
   * stays pending) when the address is at its limit of authenticated connections, unless
   * `replacing` (the device's own earlier connection is about to be closed). `gone` when the
   * connection was closed meanwhile (its deadline passed while its credentials were checked).
   */
  authenticate(gateTicket: GateTicket, replacing = false): 'authenticated' | 'full' | 'gone' {
    const ticket = gateTicket as Ticket;
    const counts = this.#byAddress.get(ticket.address);
    if (ticket.state !== 'pending' || !counts) return 'gone';
    const max = this.#opts.maxAuthenticatedPerAddress;
    if (max > 0 && counts.authenticated >= max && !replacing) return 'full';
    this.#clear(ticket);
    counts.pending.delete(ticket);
    counts.authenticated++;
    ticket.state = 'authenticated';
    return 'authenticated';
  }

  /** The connection closed (whatever closed it). */
  release(gateTicket: GateTicket): void {
    const ticket = gateTicket as Ticket;
    const counts = this.#byAddress.get(ticket.address);
    const was = ticket.state;
    ticket.state = 'released';
    this.#clear(ticket);
    if (!counts) return;
    if (was === 'pending') counts.pending.delete(ticket);
    else if (was === 'authenticated' && counts.authenticated > 0) counts.authenticated--;
    if (counts.pending.size === 0 && counts.authenticated === 0) this.#byAddress.delete(ticket.address);
  }

  /** Stops every timer (the connections themselves are the transport's to close). */
  close(): void {
    for (const counts of this.#byAddress.values()) for (const t of counts.pending) this.#clear(t);
    this.#byAddress.clear();
  }

  /** Sets the deadline, only ever earlier. */
  #schedule(ticket: Ticket, deadline: number): void {
    if (deadline >= ticket.deadline) return;
    this.#clear(ticket);
    ticket.deadline = deadline;
    ticket.timer = setTimeout(() => this.#expire(ticket, 'deadline'), Math.max(0, deadline - performance.now()));
    ticket.timer.unref?.();
  }

  #clear(ticket: Ticket): void {
    if (ticket.timer) clearTimeout(ticket.timer);
    ticket.timer = undefined;
  }

  #expire(ticket: Ticket, why: 'evicted' | 'deadline'): void {
    if (ticket.state !== 'pending') return;
    this.#opts.onClose(ticket.address, why);
    this.release(ticket);
    ticket.conn.destroy();
  }
}
