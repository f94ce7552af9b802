// Package linecount counts the lines an edit tool added and removed, the
// way Amp's own UI counts them: from the tool's input, not from what the
// tool answered (docs/counting.md, "Lines changed").
//
//   - edit_file: a line diff of old_str → new_str (Diff).
//   - create_file: the lines of content (Lines).
//   - apply_patch: the + and - lines of patchText (Patch).
//
// A line is what ends at "\n" (a "\r" before it is part of the line, so a
// CRLF is one line break), plus a last line without one. Lines compare by
// their bytes: a change of whitespace or of line ending changes the line.
package linecount
