package lsp

import (
	"context"
	"errors"

	"github.com/warden-run/warden/tool"
)

func errNotFound(rel string) error {
	return tool.Errorf(tool.KindNotFound, "%s: no such file", rel)
}

func errNotRegular(rel string) error {
	return tool.Errorf(tool.KindInvalidArguments, "%s: not a regular file", rel)
}

func errTooLarge(rel string, size int64) error {
	return tool.Errorf(tool.KindFailed, "%s: too large for a language server (%d bytes, limit %d)", rel, size, maxDocumentSize)
}

// classify gives err a tool.Kind: a *tool.Error keeps its own, the caller's
// cancellation is cancelled, everything else that went wrong with a server
// is failed.
func classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var te *tool.Error
	if errors.As(err, &te) {
		return te
	}
	if ctx.Err() != nil {
		return tool.Errorf(tool.KindCancelled, "lsp request cancelled: %v", context.Cause(ctx))
	}
	return tool.Errorf(tool.KindFailed, "%v", err)
}
