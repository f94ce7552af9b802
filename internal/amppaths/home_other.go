//go:build !darwin && !windows

package amppaths

// Elsewhere XDG_DATA_HOME, when set, is the only place.
const homeAlways = false
