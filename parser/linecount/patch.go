package linecount

import "strings"

// Patch returns the lines added and removed by an apply_patch patchText
// (the "*** Begin Patch" format): in an "*** Add File:" section every
// "+" line, in an "*** Update File:" section (moved by "*** Move to:" or
// not) its "+" and "-" lines. An "*** Delete File:" section lists no lines:
// the patch does not say how long the file was, so it counts none (Amp's
// UI counts the same way, from the input). Lines outside a section, and
// the headers, count nothing.
func Patch(text string) (added, removed int64) {
	in := false // inside an add or update section
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if strings.HasPrefix(line, "*** ") {
			h := strings.TrimRight(line[4:], "\r")
			switch {
			case strings.HasPrefix(h, "Add File:"), strings.HasPrefix(h, "Update File:"):
				in = true
			case strings.HasPrefix(h, "Move to:"), h == "End of File":
				// Still the same section.
			default: // Delete File, Begin Patch, End Patch
				in = false
			}
			continue
		}
		if !in || line == "" {
			continue
		}
		switch line[0] {
		case '+':
			added++
		case '-':
			removed++
		}
	}
	return added, removed
}
