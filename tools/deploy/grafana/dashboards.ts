import {
  DashboardBuilder,
  DatasourceVariableBuilder,
  type Dashboard,
} from "@grafana/grafana-foundation-sdk/dashboard";
import { DataqueryBuilder } from "@grafana/grafana-foundation-sdk/prometheus";
import { PanelBuilder as StatPanel } from "@grafana/grafana-foundation-sdk/stat";
import { PanelBuilder as TimeseriesPanel } from "@grafana/grafana-foundation-sdk/timeseries";
import { DASHBOARDS, type DashboardSpec, type PanelSpec } from "./panels.js";

/** Every panel queries the datasource the viewer picks: `${datasource}` (a Prometheus datasource variable). */
const DATASOURCE = { type: "prometheus", uid: "${datasource}" };

function panel(spec: PanelSpec) {
  const target = new DataqueryBuilder().expr(spec.expr).legendFormat(spec.legend).datasource(DATASOURCE);
  const builder = spec.kind === "stat" ? new StatPanel() : new TimeseriesPanel();
  return builder
    .title(spec.title)
    .datasource(DATASOURCE)
    .unit(spec.unit)
    .withTarget(target)
    .height(8)
    .span(12);
}

function dashboard(spec: DashboardSpec): Dashboard {
  let builder = new DashboardBuilder(spec.title)
    .uid(spec.uid)
    .description(spec.description)
    .tags(["lampline", "generated"])
    .refresh("30s")
    .time({ from: "now-1h", to: "now" })
    .withVariable(new DatasourceVariableBuilder("datasource").label("Data source").type("prometheus"));
  for (const panelSpec of spec.panels) builder = builder.withPanel(panel(panelSpec));
  return builder.build();
}

/** The dashboards as Grafana JSON (stable uids, templated datasource), built with the foundation SDK. */
export function dashboards(): Dashboard[] {
  return DASHBOARDS.map(dashboard);
}
