// Package deploy holds no code: it is the home of the deployment files
// (systemd unit and drop-ins, example config, Prometheus alerts and their
// tests, Grafana dashboard) and of the tests that keep them honest against
// the code: the example config against config.Default, and every metric name
// the alerts and the dashboard use against a real scrape of `watchdog serve`.
// scripts/deploy-check.sh runs the checks that need promtool and
// systemd-analyze.
package deploy
