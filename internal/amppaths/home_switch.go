//go:build darwin || windows

package amppaths

// The CLI's platform switch ignores XDG_DATA_HOME on macOS and Windows.
const homeAlways = true
