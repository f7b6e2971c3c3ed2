package capsyntax

import (
	"fmt"
	"strings"
)

// Topic limits. They keep a topic a short, portable relative path: every
// topic maps to exactly one file, <topic>.md, below the memories directory.
const (
	// MaxTopicBytes bounds a whole topic.
	MaxTopicBytes = 200
	// MaxTopicDepth bounds the number of '/'-separated components.
	MaxTopicDepth = 8
	// MaxTopicComponentBytes bounds one component, well under every filesystem's
	// name limit once ".md" and a temp-file prefix are added.
	MaxTopicComponentBytes = 64
)

// ValidateTopic reports why topic cannot name a memory, or nil when it can.
//
// A topic is 1 to MaxTopicDepth components separated by '/'. Each component
// is 1–64 bytes of A-Z a-z 0-9 '_' '-' '.', must not start with '.' (so no
// ".", "..", or hidden names, which also keeps the store's own temp files out
// of the topic namespace) and must not end in ".md" (so that a topic's
// directory never collides with another topic's file). Nothing else is
// accepted: no empty components, no leading or trailing '/', no backslash, no
// NUL, no non-ASCII.
func ValidateTopic(topic string) error {
	if topic == "" {
		return fmt.Errorf("topic is empty")
	}
	if len(topic) > MaxTopicBytes {
		return fmt.Errorf("topic is %d bytes, over the limit of %d", len(topic), MaxTopicBytes)
	}
	depth := 0
	for comp := range strings.SplitSeq(topic, "/") {
		depth++
		if depth > MaxTopicDepth {
			return fmt.Errorf("topic %q has more than %d components", topic, MaxTopicDepth)
		}
		if err := ValidateTopicComponent(comp); err != nil {
			return fmt.Errorf("topic %q: %w", topic, err)
		}
	}
	return nil
}

// ValidateTopicComponent reports why comp cannot be one component of a
// topic, or nil.
func ValidateTopicComponent(comp string) error {
	switch {
	case comp == "":
		return fmt.Errorf("empty component (leading, trailing or double '/')")
	case len(comp) > MaxTopicComponentBytes:
		return fmt.Errorf("component of %d bytes, over the limit of %d", len(comp), MaxTopicComponentBytes)
	case comp[0] == '.':
		return fmt.Errorf("component %q starts with '.'", comp)
	case strings.HasSuffix(strings.ToLower(comp), ".md"):
		return fmt.Errorf("component %q ends in .md", comp)
	}
	for i := 0; i < len(comp); i++ {
		if !TopicByte(comp[i]) {
			return fmt.Errorf("byte %#x at offset %d is not one of A-Z a-z 0-9 _ - .", comp[i], i)
		}
	}
	return nil
}

// TopicByte reports whether c may appear in a topic component.
func TopicByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.'
}
