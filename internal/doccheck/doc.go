// Package doccheck holds the test that keeps the documentation honest: every
// file path a Markdown document of the repository names must exist. It has
// no code of its own.
package doccheck
