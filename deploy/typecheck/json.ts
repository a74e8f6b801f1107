// Types for checking Grafana dashboard JSON against @grafana/schema.
//
// Why `Json<T>`: @grafana/schema models many fields as TypeScript string
// enums (FieldColorModeId, GraphDrawStyle, ...), and a string literal from a
// JSON file is never assignable to a string enum. `Json<T>` swaps every
// string enum for the union of its values (`${T}`) and keeps everything else,
// so a dashboard typed with it accepts exactly what Grafana writes to JSON.
import type { DataQuery, DataSourceRef } from '@grafana/schema';

export type Json<T> = T extends string
  ? `${T}`
  : T extends readonly (infer U)[]
    ? Json<U>[]
    : T extends (...args: never[]) => unknown
      ? never
      : T extends object
        ? { [K in keyof T]: Json<T[K]> }
        : T;

// A query of Grafana's Prometheus data source. @grafana/schema ships no
// Prometheus query type (only the generic DataQuery), so the fields the
// Prometheus query editor writes are listed here; anything else is an error.
export interface PrometheusQuery extends DataQuery {
  datasource?: DataSourceRef | null;
  expr: string;
  legendFormat?: string;
  instant?: boolean;
  range?: boolean;
  exemplar?: boolean;
  format?: 'time_series' | 'table' | 'heatmap';
  interval?: string;
  intervalFactor?: number;
  editorMode?: 'code' | 'builder';
}
