/**
 * @module Turns off onnxruntime's usage telemetry. onnxruntime-node (1.30, Linux and macOS)
 * otherwise sends events to Microsoft, keeping a device id and an event cache under the user's
 * cache directory, and where it finds no CA bundle (the container image) prints plain-text
 * warnings about it on every start. Nothing may leave an operator's machine unasked.
 *
 * The native library reads its opt-out, ORT_DISABLE_TELEMETRY, from the process environment once,
 * when the first onnxruntime session of the process starts. A worker thread's `process.env` is
 * its own copy that never reaches that environment, so the main thread sets it, before any thread
 * loads a model; workers inherit it in their copy, which is how a worker checks it was done.
 */
/* eslint-disable no-restricted-properties -- this module writes the one variable onnxruntime reads, it reads no configuration */
import { isMainThread } from 'node:worker_threads';

const OPT_OUT = 'ORT_DISABLE_TELEMETRY';

/**
 * In the main thread: sets the opt-out in the process environment (call it before any worker that
 * may load onnxruntime starts). In a worker: reports whether the main thread did.
 */
export function turnOffOnnxTelemetry(): boolean {
  if (isMainThread) process.env[OPT_OUT] = '1';
  return process.env[OPT_OUT] === '1';
}
