package approvals

import "sync"

// subscribers are the live pages told of changes to the pending set
// (Broker.Subscribe): one coalescing signal each, so a slow page never
// holds up a question and never misses that something changed.
type subscribers struct {
	mu   sync.Mutex
	subs map[int]chan struct{}
	next int
}

// Subscribe implements Broker.
func (s *subscribers) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[int]chan struct{}{}
	}
	id := s.next
	s.next++
	s.subs[id] = ch
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.subs, id)
		s.mu.Unlock()
	}
}

// notify signals every subscriber.
func (s *subscribers) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.subs {
		signal(ch)
	}
}

// signal sends on ch unless a signal is already pending there.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
