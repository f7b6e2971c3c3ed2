// Package tool defines warden's tool contract: what a tool declares about itself
// (Descriptor), what it returns (Result), and how it fails (Error and Kind).
//
// These are plain data types shared by every layer: the sandbox runtime fills
// them from a guest's JSON, host capabilities return Errors through them, the
// MCP server maps them onto the protocol, and the Go guest SDK produces them.
// The JSON encoding of each type is the wire format of docs/abi.md.
package tool
