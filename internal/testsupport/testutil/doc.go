// Package testutil holds the helpers the tests of several packages share:
// a log sink safe for concurrent writers, a polling wait for conditions a
// test cannot be told about, and the loader of the thread parser's
// fixtures. It is imported by tests only, and imports nothing of the
// exporter but the thread parser (so the store's and the collector's own
// tests can use it without an import cycle).
package testutil
