package oci

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// pluginFile is the file hyper-mcp's plugin images carry at their root.
const pluginFile = "plugin.wasm"

// maxTarEntries bounds the entries read from one layer.
const maxTarEntries = 4096

var errNoPlugin = errors.New("no " + pluginFile + " in layer")

// errPluginDeleted: the layer holds an OCI whiteout for plugin.wasm, so the
// lower layers' copy is not part of the image.
var errPluginDeleted = errors.New(pluginFile + " is deleted (whiteout) in layer")

// isPluginEntry reports whether a tar entry name is the plugin: /plugin.wasm
// (also ./plugin.wasm), or, as hyper-mcp accepts, plugin.wasm in a directory.
func isPluginEntry(name string) bool {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	return name == pluginFile || strings.HasSuffix(name, "/"+pluginFile)
}

// extractPlugin reads a tar layer (gzip-compressed when gz, or when it starts
// with the gzip magic) and copies the first regular plugin.wasm entry to dst.
// max bounds the entry; the decompressed stream is bounded at readLimit so a
// layer cannot make warden inflate without end looking for the entry.
func extractPlugin(r io.Reader, gz bool, dst io.Writer, max, readLimit int64) (int64, error) {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz = true
	}
	var src io.Reader = br
	if gz {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return 0, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		zr.Multistream(false)
		src = zr
	}
	lim := &limitedReader{r: src, n: readLimit}
	tr := tar.NewReader(lim)
	for i := 0; ; i++ {
		if i >= maxTarEntries {
			return 0, fmt.Errorf("%w: more than %d tar entries without %s", ErrTooLarge, maxTarEntries, pluginFile)
		}
		h, err := tr.Next()
		if err == io.EOF {
			return 0, errNoPlugin
		}
		if err != nil {
			if lim.hit {
				return 0, fmt.Errorf("%w: layer inflates past %d bytes without %s", ErrTooLarge, readLimit, pluginFile)
			}
			return 0, fmt.Errorf("tar: %w", err)
		}
		if isPluginEntry(whiteoutTarget(h.Name)) {
			return 0, errPluginDeleted
		}
		if !isPluginEntry(h.Name) || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > max {
			return 0, fmt.Errorf("%w: %s is %d bytes, more than the limit of %d", ErrTooLarge, pluginFile, h.Size, max)
		}
		n, err := io.Copy(dst, io.LimitReader(tr, max+1))
		if err != nil {
			if lim.hit {
				return n, fmt.Errorf("%w: layer inflates past %d bytes", ErrTooLarge, readLimit)
			}
			return n, fmt.Errorf("tar: reading %s: %w", pluginFile, err)
		}
		if n != h.Size {
			return n, fmt.Errorf("tar: %s is %d bytes, header says %d", pluginFile, n, h.Size)
		}
		return n, nil
	}
}

// whiteoutTarget returns the path a whiteout entry (dir/.wh.name) deletes,
// or "" for any other entry.
func whiteoutTarget(name string) string {
	dir, base := path.Split(name)
	if t, ok := strings.CutPrefix(base, ".wh."); ok && t != "" && !strings.HasPrefix(t, ".wh.") {
		return dir + t
	}
	return ""
}

// limitedReader is io.LimitedReader that remembers it ran out.
type limitedReader struct {
	r   io.Reader
	n   int64
	hit bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		l.hit = true
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
