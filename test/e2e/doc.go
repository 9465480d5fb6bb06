// Package e2e holds the end-to-end tests: the built watchdog binary
// (internal/testenv.BuildBinary, once per run) driven like a user drives
// it, its commands and `watchdog serve`, over real processes, real
// SQLite files and a throwaway PostgreSQL cluster, Alertmanager and a
// headless Chromium when installed. It has no code of its own: the tests
// reach the program only through its command line and its HTTP API, so
// they hold the contract (docs/reference/) rather than the CLI's insides,
// which cmd/watchdog's own unit tests cover.
//
// Every wait is on a condition with a generous ceiling
// (testenv.Eventually and the helpers built on it), never on a fixed
// real-time budget: a loaded machine makes the tests slower, not red.
package e2e
