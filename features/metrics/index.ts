/**
 * @module The metrics room's public surface: one app's Prometheus metrics (fed by the turn
 * observer, the session count and sources read at scrape time) and the `/metrics` route.
 */
export { createServerMetrics, type ServerMetrics, type ServerMetricsOptions } from './server-metrics.ts';
export type { MetricsSources, RefusalReason } from './sources.ts';
export { metricsRoute, type MetricsRouteOptions } from './metrics-route.ts';
