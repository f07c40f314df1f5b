/**
 * @module What the push delivery needs from the MQTT transport: the devices connected to the
 * broker here, whether or not they have an audio session open. Implemented by transport/mqtt/.
 */

export interface IdleDeviceLink {
  deviceId: string;
  clientId: string;
  /** True while the device has an audio (UDP) session open: speech then goes through the session. */
  readonly inSession: boolean;
  /** Publishes one JSON message to this device (QoS 0). False when the link is gone. */
  publish(message: Record<string, unknown>): boolean;
  /**
   * Whether this link's open audio session `sessionId` can hear speech: true once the device's
   * first UDP datagram told where its audio goes (downlink audio before that is dropped), else a
   * promise of that moment (false when the session ends first). Undefined when `sessionId` is not
   * this link's open session.
   */
  audioReady(sessionId: string): true | Promise<boolean> | undefined;
}

export interface IdleDeviceLinks {
  /** The device's broker connection here, if any (the pair when clientId is given). */
  find(deviceId: string, clientId?: string): IdleDeviceLink | undefined;
  /** Told when a device connects to the broker (queued messages are delivered then). Returns the unsubscribe. */
  onConnected(listener: (link: IdleDeviceLink) => void): () => void;
}
