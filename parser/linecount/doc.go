// Package linecount counts the lines an edit tool added and removed, the
// way Amp's thread rows count them: from the tool's input, not from what
// the tool answered (docs/counting.md, "Lines changed").
//
//   - edit_file: a line diff of old_str → new_str (Diff; Budget.Diff
//     bounds the work of the many diffs of one thread).
//   - create_file: the lines of content (Lines).
//   - apply_patch: the + and - lines of patchText (Patch).
//
// A line is what the text split on "\n" gives, as Amp splits it in
// JavaScript: a "\r" before a "\n" is part of the line (a CRLF is one line
// break), a last "\n" leaves an empty last line in a diff, and an empty
// text is one empty line. Lines compare by their bytes: a change of
// whitespace or of line ending changes the line.
package linecount
