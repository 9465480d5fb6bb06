// Package store holds what every store driver shares: the Backend interface,
// its rows, its errors (Classify) and Open, which opens a store by driver.
// Every lifecycle write goes through ApplyTransition or Register's insert.
package store
