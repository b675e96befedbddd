// Package monitoring proves what the chart ships for monitoring Apiary,
// with the monitoring tools' own code, in a module of its own so that
// kube-state-metrics' and Prometheus' dependencies stay out of the manager's:
//
//   - the kube-state-metrics custom-resource-state configuration
//     (charts/apiary/files/kube-state-metrics.yaml) is decoded with
//     kube-state-metrics' config types and compiled and run by its own store
//     code against Apiary objects, and every path in it resolves in the CRDs
//     of config/crd/bases;
//   - the alerting rules (charts/apiary/files/prometheus-rules.yaml, the
//     chart's PrometheusRule) pass `promtool check rules` and unit tests run
//     by `promtool test rules` with input series written here, and every
//     alert's tests fail when its expression is broken;
//   - every PromQL expression of the Grafana dashboard and of the rules
//     parses with Prometheus' parser and names only metrics that Apiary's
//     registry, the kube-state-metrics configuration or controller-runtime
//     (testdata/controller-runtime-metrics.txt, checked against a live
//     scrape by test/metrics) define; docs/monitoring.md lists them all.
//
// promtool is built by `make promtool` into bin/ (hack/promtool); the tests
// find it through APIARY_PROMTOOL, which the Makefile exports.
package monitoring
