// Package docs holds the reference pages in Markdown, one per subject,
// that the README links to. It has no code: its test keeps every relative
// link and #anchor in README.md, BENCHMARKS.md, deploy/README.md and
// docs/*.md pointing at a file and heading that exist, and the README a
// front door of at most 300 lines.
package docs
