// Package deploy holds no code: it is the home of the deployment files
// (systemd unit and drop-ins, example config, Prometheus alerts and their
// tests, Grafana dashboard) and of the tests that keep them honest against
// the code: the example config against config.Default; every metric name
// the alerts and the dashboard use against a real scrape of `watchdog
// serve`; the dashboard provisioned as Grafana's file provisioning reads it
// (grafana_test.go); and every panel query and rule expression evaluated by
// a real Prometheus scraping a real daemon with entities in varied states
// (realdata_test.go). scripts/deploy-check.sh runs the checks that need
// promtool and systemd-analyze.
package deploy
