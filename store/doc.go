// Package store is what every store shares and every consumer reads: the
// Backend interface, the rows it hands out (Entity, AuditRow, Dismissal,
// Observation, the change feed's Cursor and Batch, a transition's Change),
// the errors and what they mean for a write (Classify), and Open, which
// opens a store by driver through the drivers that registered themselves.
// The drivers are watchdog/store/sqlite (embedded, the default) and
// watchdog/store/postgres; this package imports neither database library.
// Store methods are named after intent; every lifecycle write goes through
// ApplyTransition or the initial insert of Register.
package store
