package termsafe

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
)

// Handler wraps a slog.Handler that writes to a terminal (warden's stderr
// log) so that every record passes Escape: its message, keys, string
// values, errors and any other value's text, in groups too. Call sites
// escape what a module supplied already; this is the net under them, so a
// module's text that reaches a log line some other way (an error that
// quotes a descriptor field, a path a guest asked for) is shown escaped
// there exactly as on the terminal, and slog's own quoting (which keeps
// printable invisible characters such as U+3164) is not relied on.
type Handler struct {
	next slog.Handler
	text func(string) string
}

// NewHandler returns next behind Escape.
func NewHandler(next slog.Handler) *Handler { return &Handler{next: next, text: Escape} }

// NewTextHandler returns next behind f instead of Escape: every text of a
// record (message, keys, string values, errors, any value's text) passes
// through f, as through Escape in NewHandler. Redaction uses it
// (internal/redact), outside the escaping handler, so that it sees the
// text as it was written.
func NewTextHandler(next slog.Handler, f func(string) string) *Handler {
	return &Handler{next: next, text: f}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, h.text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.escapeAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	esc := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		esc[i] = h.escapeAttr(a)
	}
	return &Handler{next: h.next.WithAttrs(esc), text: h.text}
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(h.text(name)), text: h.text}
}

func (h *Handler) escapeAttr(a slog.Attr) slog.Attr {
	a.Key = h.text(a.Key)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(h.text(v.String()))
	case slog.KindGroup:
		group := v.Group()
		esc := make([]slog.Attr, len(group))
		for i, g := range group {
			esc[i] = h.escapeAttr(g)
		}
		a.Value = slog.GroupValue(esc...)
	case slog.KindAny:
		// The text the handler would print for it (slog's text and JSON
		// handlers use Error, then MarshalText, then %+v); a value whose
		// text needs no escape is kept as it is.
		var text string
		switch x := v.Any().(type) {
		case error:
			text = x.Error()
		case []byte: // slog's handlers print bytes as text
			text = string(x)
		case json.RawMessage:
			text = string(x)
		case encoding.TextMarshaler:
			b, err := x.MarshalText()
			if err != nil {
				return a
			}
			text = string(b)
		default:
			text = fmt.Sprintf("%+v", x)
		}
		if esc := h.text(text); esc != text {
			a.Value = slog.StringValue(esc)
		} else {
			a.Value = v
		}
	default:
		a.Value = v
	}
	return a
}
