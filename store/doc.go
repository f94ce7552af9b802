// Package store is the counting side of the exporter: the stores of the
// three sources (ThreadStore for thread files and Amp server threads,
// StreamStore for stream-json, AmyStore for Amy turn streams), the
// identities that make every counted thing count once (pins, items,
// Owners, LabelCap), the fixed-point arithmetic and pricing of what they
// count, and the persisted forms of their state. It has no Prometheus
// import (a test holds it to that): package collector describes and
// renders snapshots of these stores.
//
// Every series a store keeps belongs to a family of the families table
// (families.go): its name as persisted, its fixed-point scale, the stores
// that keep it, and the metric it is exposed as (plain data: the collector
// renders it). A family is declared there once.
package store
