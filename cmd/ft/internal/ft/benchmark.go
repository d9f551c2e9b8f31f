package ft

import (
	"github.com/cockroachdb/errors"
	"github.com/gofabric/gofabric/fi"
)

// injectSize is the size below which the benchmarks inject instead of
// send: -j when given, else the provider's inject size; none with device
// memory (-H).
func (s *Session) injectSize() int {
	if s.opts.Has(OptEnableHMEM) {
		return 0
	}
	if s.opts.InjectSizeSet {
		return s.opts.InjectSize
	}
	if s.info.TxAttr == nil {
		return 0
	}
	return s.info.TxAttr.InjectSize
}

// pingpong is benchmark_shared.c's pingpong(): after an ft_sync, the
// client sends and then waits for the server's message, the server the
// other way round, Warmup untimed and Iterations timed rounds of
// TransferSize bytes (injected when smaller than the inject size), then
// one result row with two transfers a round.
func (s *Session) pingpong() error {
	size, inject := s.opts.TransferSize, s.injectSize()
	if size > s.maxMsgSize() {
		return errors.Wrapf(fi.EMSGSIZE, "-S %d is larger than %s's max_msg_size %d", size, s.info.FabricAttr.ProvName, s.maxMsgSize())
	}
	if err := s.sync(); err != nil {
		return err
	}
	send := func() error {
		if size < inject {
			return s.inject(size)
		}
		return s.tx(size)
	}
	rounds := s.opts.Iterations + s.opts.Warmup
	for i := 0; i < rounds; i++ {
		if i == s.opts.Warmup {
			s.start()
		}
		if s.opts.IsClient() {
			if err := send(); err != nil {
				return s.inLoop(err, i)
			}
			if err := s.rx(size); err != nil {
				return s.inLoop(err, i)
			}
			continue
		}
		if err := s.rx(size); err != nil {
			return s.inLoop(err, i)
		}
		if err := send(); err != nil {
			return s.inLoop(err, i)
		}
	}
	if s.opts.Iterations == 0 {
		s.start() // no timed round: an empty interval
	}
	s.stop()
	s.showPerf("", size, s.opts.Iterations, 2)
	return nil
}

// inLoop says where a benchmark loop failed.
func (s *Session) inLoop(err error, i int) error {
	return errors.Wrapf(err, "size %d, iteration %d of %d (with %d warm-ups)", s.opts.TransferSize, i+1, s.opts.Iterations+s.opts.Warmup, s.opts.Warmup)
}
