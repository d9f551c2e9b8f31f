package fabtests

import (
	"testing"

	"github.com/gofabric/gofabric/ep"
	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
	"github.com/stretchr/testify/require"
)

// testCM is the connection-management group (fi_cm(3)): connect, accept,
// reject, shutdown, names, private data, backlog and close ordering, with
// the event semantics of ep.ConnState.
func testCM(t *testing.T, s *suite) {
	s.run2(t, "connect-accept", func(t *testing.T) {
		p := s.pair(t, epOpts{})
		requireNoEvent(t, p.l.eq)
		requireNoEvent(t, p.client.eq)
		requireNoEvent(t, p.server.eq)
	}, func(t *testing.T) {
		l, lk := s.listen2(t)
		srv := s.accept2(t, l, lk, epOpts{}, fixed("welcome from the parent"))
		lk.recv(t, "connected")
		requireNoEvent(t, l.eq)
		requireNoEvent(t, srv.eq)
		lk.finish(t)
	}, func(t *testing.T, lk *link) {
		c, dest := s.client2(t, lk, epOpts{})
		s.connect2(t, lk, c, dest, fixed("hello from the child"))
		requireNoEvent(t, c.eq)
		lk.send(t, "connected", nil)
	})

	// The most private data CMDataSize allows, both ways.
	maxData := func(t testing.TB, seed byte) func(max int) []byte {
		return func(max int) []byte {
			require.Positive(t, max, "CMDataSize (FI_OPT_CM_DATA_SIZE)")
			return pattern(max, seed)
		}
	}
	s.run2(t, "private-data", func(t *testing.T) {
		l := s.listen(t)
		c := s.client(t, l, epOpts{})
		max := c.cm.CMDataSize()
		require.Positive(t, max, "CMDataSize (FI_OPT_CM_DATA_SIZE)")
		s.connectFrom(t, l, c, epOpts{}, pattern(max, 1), pattern(max, 2))
	}, func(t *testing.T) {
		l, lk := s.listen2(t)
		s.accept2(t, l, lk, epOpts{}, maxData(t, 2))
		lk.finish(t)
	}, func(t *testing.T, lk *link) {
		c, dest := s.client2(t, lk, epOpts{})
		s.connect2(t, lk, c, dest, maxData(t, 1))
	})

	s.run2(t, "reject", func(t *testing.T) {
		l := s.listen(t)
		c := s.client(t, l, epOpts{})
		require.NoError(t, c.cm.Connect(l.name, []byte("let me in")))
		req := l.connReq(t, s)
		require.Equal(t, []byte("let me in"), req.Data)
		rdata := []byte("go away")
		require.NoError(t, l.pep.Reject(req.Info.Handle, rdata), "reject")
		e := s.expectEQError(t, c.eq)
		require.Equal(t, fi.ECONNREFUSED, e.Err, "a rejected connect reports ECONNREFUSED, got %v", e)
		require.ErrorIs(t, e, fi.ECONNREFUSED)
		require.Equal(t, rdata, e.ErrData, "the reject's private data arrives as ErrData")
		requireSameFid(t, c.ep, e.Fid, "the error names the connecting endpoint")

		requireCoded(t, l.pep.Reject(req.Info.Handle, nil))
		require.ErrorIs(t, c.cm.Connect(l.name, nil), fi.EOPBADSTATE, "connect after a reject")
		require.ErrorIs(t, c.cm.Shutdown(0), fi.ENOTCONN, "shutdown of a rejected endpoint")
		require.NoError(t, c.ep.Close())
		requireNoEvent(t, c.eq)

		// The listener keeps working after a reject.
		s.connect(t, l, epOpts{}, []byte("again"), nil)
	}, func(t *testing.T) {
		l, lk := s.listen2(t)
		req := l.connReq(t, s)
		require.Equal(t, []byte("let me in"), req.Data)
		require.NoError(t, l.pep.Reject(req.Info.Handle, []byte("go away")), "reject")
		requireCoded(t, l.pep.Reject(req.Info.Handle, nil))
		// The listener keeps working after a reject.
		s.accept2(t, l, lk, epOpts{}, fixed("welcome"))
		lk.finish(t)
	}, func(t *testing.T, lk *link) {
		c, dest := s.client2(t, lk, epOpts{})
		require.NoError(t, c.cm.Connect(dest, []byte("let me in")))
		e := s.expectEQError(t, c.eq)
		require.Equal(t, fi.ECONNREFUSED, e.Err, "a rejected connect reports ECONNREFUSED, got %v", e)
		require.ErrorIs(t, e, fi.ECONNREFUSED)
		require.Equal(t, []byte("go away"), e.ErrData, "the reject's private data arrives as ErrData")
		requireSameFid(t, c.ep, e.Fid, "the error names the connecting endpoint")
		require.ErrorIs(t, c.cm.Connect(dest, nil), fi.EOPBADSTATE, "connect after a reject")
		require.ErrorIs(t, c.cm.Shutdown(0), fi.ENOTCONN, "shutdown of a rejected endpoint")
		require.NoError(t, c.ep.Close())
		requireNoEvent(t, c.eq)

		again := s.clientTo(t, c.info.AddrFormat, dest, epOpts{})
		lk.poll = again.poll
		s.connect2(t, lk, again, dest, fixed("again"))
	})

	for _, tc := range []struct {
		name string
		// act ends the connection of p.
		act func(t *testing.T, p *pair)
		// closed is the side whose endpoint act closed, if any.
		closed func(p *pair) *peer
		// by is the side that shuts down in the two-process variant,
		// "client" (the peer process) or "server" (the parent); empty
		// for a test without one.
		by string
	}{
		{"shutdown-client", func(t *testing.T, p *pair) { require.NoError(t, p.client.cm.Shutdown(0)) }, nil, "client"},
		{"shutdown-server", func(t *testing.T, p *pair) { require.NoError(t, p.server.cm.Shutdown(0)) }, nil, "server"},
		{"shutdown-both", func(t *testing.T, p *pair) {
			require.NoError(t, p.client.cm.Shutdown(0))
			require.NoError(t, p.server.cm.Shutdown(0))
		}, nil, ""},
		{"close-client", func(t *testing.T, p *pair) { require.NoError(t, p.client.ep.Close()) },
			func(p *pair) *peer { return p.client }, ""},
		{"close-server", func(t *testing.T, p *pair) { require.NoError(t, p.server.ep.Close()) },
			func(p *pair) *peer { return p.server }, ""},
	} {
		one := func(t *testing.T) {
			p := s.pair(t, epOpts{})
			tc.act(t, p)
			var closed *peer
			if tc.closed != nil {
				closed = tc.closed(p)
			}
			for _, x := range []*peer{p.client, p.server} {
				if x != closed {
					s.requireShutdown(t, x)
				}
			}
			// Once both endpoints are closed nothing more can arrive: a
			// second Shutdown would be queued by now.
			for _, x := range []*peer{p.client, p.server} {
				if x != closed {
					require.NoError(t, x.ep.Close(), "%s: close", x.role)
				}
			}
			requireNoEvent(t, p.client.eq)
			requireNoEvent(t, p.server.eq)
			requireNoEvent(t, p.l.eq)
		}
		if tc.by == "" {
			s.run(t, tc.name, one)
			continue
		}
		// Each process checks its side's one Shutdown, then both say so
		// and close: after the close no second Shutdown can be queued.
		s.run2(t, tc.name, one, func(t *testing.T) {
			l, lk := s.listen2(t)
			srv := s.accept2(t, l, lk, epOpts{}, noData)
			lk.recv(t, "connected")
			if tc.by == "server" {
				require.NoError(t, srv.cm.Shutdown(0))
			}
			s.requireShutdown(t, srv)
			lk.send(t, "shut", nil)
			lk.recv(t, "shut")
			require.NoError(t, srv.ep.Close(), "server: close")
			requireNoEvent(t, srv.eq)
			requireNoEvent(t, l.eq)
			lk.finish(t)
		}, func(t *testing.T, lk *link) {
			c, dest := s.client2(t, lk, epOpts{})
			s.connect2(t, lk, c, dest, noData)
			lk.send(t, "connected", nil)
			if tc.by == "client" {
				require.NoError(t, c.cm.Shutdown(0))
			}
			s.requireShutdown(t, c)
			lk.recv(t, "shut")
			lk.send(t, "shut", nil)
			require.NoError(t, c.ep.Close(), "client: close")
			requireNoEvent(t, c.eq)
		})
	}

	s.run2(t, "peer-gone", nil, func(t *testing.T) {
		// The peer process is killed (SIGKILL) while connected: the
		// server gets one eq.Shutdown, and its posted receive an error
		// entry, within the timeout.
		l, lk := s.listen2(t)
		srv := s.accept2(t, l, lk, epOpts{}, noData)
		m, hasMsg := srv.ep.(ep.Msg)
		hasMsg = hasMsg && srv.info.Caps&fi.CapMsg != 0
		rctx := &opCtx{"recv pending when the peer died"}
		if hasMsg {
			rbuf := make([]byte, 64)
			require.NoError(t, m.Recv(rbuf, srv.desc(t, rbuf), fi.AddrUnspec, rctx))
		}
		lk.recv(t, "connected")
		lk.kill(t)
		sd := expectEvent[*eq.Shutdown](t, s, srv.eq)
		requireSameFid(t, srv.ep, sd.Fid, "server's Shutdown names its endpoint")
		if hasMsg {
			e := alone(srv).cqError(t, s, srv)
			requireCoded(t, e)
			require.Same(t, rctx, e.Context, "the error entry's context is the posted receive's")
			t.Logf("the posted receive ended with %v", e)
		}
		require.NoError(t, srv.ep.Close(), "server: close")
		requireNoEvent(t, srv.eq)
		requireNoEvent(t, l.eq)
		srv.requireCQEmpty(t)
	}, func(t *testing.T, lk *link) {
		c, dest := s.client2(t, lk, epOpts{})
		s.connect2(t, lk, c, dest, noData)
		lk.send(t, "connected", nil)
		// The harness now polls until the parent kills this process.
	})

	s.run(t, "names", func(t *testing.T) {
		l := s.listen(t)
		small := make([]byte, 1)
		n, err := l.pep.Name(small)
		require.ErrorIs(t, err, fi.ETOOSMALL, "passive endpoint name into 1 byte")
		require.Equal(t, len(l.name), n, "ETOOSMALL reports the full length")
		require.Equal(t, l.name[0], small[0], "ETOOSMALL fills what fits")

		p := s.connect(t, l, epOpts{}, nil, nil)
		cname, sname := name(t, p.client.cm), name(t, p.server.cm)
		require.Equal(t, cname, peerName(t, p.server.cm), "server's peer is the client's name")
		require.Equal(t, sname, peerName(t, p.client.cm), "client's peer is the server's name")
		for _, x := range []*peer{p.client, p.server} {
			full := name(t, x.cm)
			n, err := x.cm.Name(small)
			require.ErrorIs(t, err, fi.ETOOSMALL, "%s: name into 1 byte", x.role)
			require.Equal(t, len(full), n, "%s: name length with ETOOSMALL", x.role)
			peer := peerName(t, x.cm)
			n, err = x.cm.Peer(small)
			require.ErrorIs(t, err, fi.ETOOSMALL, "%s: peer into 1 byte", x.role)
			require.Equal(t, len(peer), n, "%s: peer length with ETOOSMALL", x.role)
			require.Equal(t, peer[0], small[0], "%s: ETOOSMALL fills what fits", x.role)
		}
	})

	s.run(t, "setname", func(t *testing.T) {
		// Take a free address from a listener, free it, and give it to a
		// new passive endpoint with SetName (fi_setname).
		first := s.listen(t)
		addr := first.name
		require.NoError(t, first.pep.Close())
		l := s.passive(t)
		err := l.pep.SetName(addr)
		skipIfAbsent(t, err, "fi_setname on passive endpoints")
		require.NoError(t, l.pep.Listen())
		l.name = name(t, l.pep)
		require.Equal(t, addr, l.name, "the name SetName assigned")
		s.connect(t, l, epOpts{}, nil, nil)
	})

	s.run(t, "oversize-connect", func(t *testing.T) {
		l := s.listen(t)
		c := s.client(t, l, epOpts{})
		max := c.cm.CMDataSize()
		require.ErrorIs(t, c.cm.Connect(l.name, make([]byte, max+1)), fi.EINVAL,
			"connect with %d bytes of private data, CMDataSize %d", max+1, max)
		// Nothing was sent and nothing changed: the endpoint connects, and
		// the first request the listener sees carries the second call's data.
		s.connectFrom(t, l, c, epOpts{}, []byte("fits"), nil)
	})

	s.run(t, "oversize-accept", func(t *testing.T) {
		l := s.listen(t)
		c := s.client(t, l, epOpts{})
		require.NoError(t, c.cm.Connect(l.name, nil))
		srv := s.server(t, l, l.connReq(t, s), epOpts{})
		max := srv.cm.CMDataSize()
		require.ErrorIs(t, srv.cm.Accept(make([]byte, max+1)), fi.EINVAL,
			"accept with %d bytes of private data, CMDataSize %d", max+1, max)
		require.NoError(t, srv.cm.Accept([]byte("welcome")), "accept after a refused accept")
		p := &pair{l: l, client: c, server: srv}
		p.connected(t, s, []byte("welcome"))
	})

	s.run(t, "oversize-reject", func(t *testing.T) {
		l := s.listen(t)
		c := s.client(t, l, epOpts{})
		require.NoError(t, c.cm.Connect(l.name, nil))
		req := l.connReq(t, s)
		max := c.cm.CMDataSize()
		require.ErrorIs(t, l.pep.Reject(req.Info.Handle, make([]byte, max+1)), fi.EINVAL,
			"reject with %d bytes of private data, CMDataSize %d", max+1, max)
		require.NoError(t, l.pep.Reject(req.Info.Handle, []byte("no")), "reject after a refused reject")
		e := s.expectEQError(t, c.eq)
		require.Equal(t, fi.ECONNREFUSED, e.Err)
		require.Equal(t, []byte("no"), e.ErrData)
	})

	s.run(t, "backlog", func(t *testing.T) {
		l := s.passive(t)
		b, ok := l.pep.(ep.BacklogSetter)
		if !ok {
			t.Skipf("passive endpoint %T has no SetBacklog (fi_control FI_BACKLOG)", l.pep)
		}
		requireCoded(t, b.SetBacklog(0))
		require.NoError(t, b.SetBacklog(1))
		require.NoError(t, l.pep.Listen())
		l.name = name(t, l.pep)

		first := s.client(t, l, epOpts{})
		require.NoError(t, first.cm.Connect(l.name, []byte("first")))
		req := l.connReq(t, s)
		require.Equal(t, []byte("first"), req.Data)

		// One request is pending: the next one is refused.
		second := s.client(t, l, epOpts{})
		require.NoError(t, second.cm.Connect(l.name, []byte("second")))
		e := s.expectEQError(t, second.eq)
		require.Equal(t, fi.ECONNREFUSED, e.Err, "connect beyond the backlog: %v", e)

		// Accepting the pending request makes room again.
		srv := s.server(t, l, req, epOpts{})
		require.NoError(t, srv.cm.Accept(nil))
		(&pair{l: l, client: first, server: srv}).connected(t, s, nil)
		s.connect(t, l, epOpts{}, []byte("third"), nil)
	})

	s.run(t, "connect-refused", func(t *testing.T) {
		gone := s.listen(t)
		require.NoError(t, gone.pep.Close())
		c := s.clientTo(t, gone.info.AddrFormat, gone.name, epOpts{})
		require.NoError(t, c.cm.Connect(gone.name, []byte("anyone?")), "connect reports failure on the event queue")
		e := s.expectEQError(t, c.eq)
		require.Equal(t, fi.ECONNREFUSED, e.Err, "connect where nothing listens: %v", e)
		requireSameFid(t, c.ep, e.Fid, "the error names the connecting endpoint")
		require.ErrorIs(t, c.cm.Shutdown(0), fi.ENOTCONN, "shutdown after a failed connect")
		require.NoError(t, c.ep.Close())
		requireNoEvent(t, c.eq)
	})

	s.run(t, "state-errors", func(t *testing.T) {
		l := s.listen(t)
		c := s.client(t, l, epOpts{})
		require.ErrorIs(t, c.cm.Shutdown(0), fi.ENOTCONN, "shutdown before connect")
		require.ErrorIs(t, c.cm.Accept(nil), fi.EINVAL, "accept on an endpoint not opened from a request")
		require.NoError(t, c.cm.Connect(l.name, nil))
		require.ErrorIs(t, c.cm.Connect(l.name, nil), fi.EALREADY, "connect while connecting")

		srv := s.server(t, l, l.connReq(t, s), epOpts{})
		require.ErrorIs(t, srv.cm.Connect(l.name, nil), fi.EINVAL, "connect on an endpoint opened from a request")
		require.NoError(t, srv.cm.Accept(nil))
		err := srv.cm.Accept(nil)
		require.Contains(t, []fi.Errno{fi.EALREADY, fi.EISCONN}, fi.Code(err), "second accept: %v", err)

		p := &pair{l: l, client: c, server: srv}
		p.connected(t, s, nil)
		require.ErrorIs(t, c.cm.Connect(l.name, nil), fi.EISCONN, "connect when connected")
		require.ErrorIs(t, srv.cm.Accept(nil), fi.EISCONN, "accept when connected")
		requireNoEvent(t, c.eq)
		requireNoEvent(t, srv.eq)
	})

	s.run(t, "close-pending", func(t *testing.T) {
		// Closing a passive endpoint refuses the requests it holds.
		l := s.listen(t)
		c := s.client(t, l, epOpts{})
		require.NoError(t, c.cm.Connect(l.name, nil))
		req := l.connReq(t, s)
		require.NoError(t, l.pep.Close())
		e := s.expectEQError(t, c.eq)
		require.Equal(t, fi.ECONNREFUSED, e.Err, "pending request when the listener closes: %v", e)
		require.ErrorIs(t, l.pep.Reject(req.Info.Handle, nil), fi.EBADF, "reject after close")
		require.ErrorIs(t, l.pep.Listen(), fi.EBADF, "listen after close")
	})

	s.run(t, "close-order", func(t *testing.T) {
		l := s.passive(t)
		require.NoError(t, l.pep.Listen())
		requireCoded(t, l.pep.Listen())
		require.ErrorIs(t, l.eq.Close(), fi.EBUSY, "closing an EQ bound to a passive endpoint")
		require.ErrorIs(t, l.fabric.Close(), fi.EBUSY, "closing a fabric with objects open")
		l.name = name(t, l.pep)
		p := s.connect(t, l, epOpts{}, nil, nil)
		require.ErrorIs(t, p.client.eq.Close(), fi.EBUSY, "closing an EQ bound to an endpoint")
		require.ErrorIs(t, p.server.domain.Close(), fi.EBUSY, "closing a domain with an endpoint open")
		require.NoError(t, l.pep.Close(), "a listener closes while its accepted connection lives")
		require.ErrorIs(t, l.pep.Close(), fi.EBADF)
		require.NoError(t, l.eq.Close())
		if m, ok := p.client.ep.(ep.Msg); ok {
			// The accepted connection outlives its listener.
			buf := make([]byte, 8)
			require.NoError(t, m.Recv(buf, p.client.desc(t, buf), fi.AddrUnspec, nil))
			sm := p.server.ep.(ep.Msg)
			msg := []byte("still up")
			desc := p.server.desc(t, msg)
			p.post(t, s, "send", func() error { return sm.Send(msg, desc, fi.AddrUnspec, nil) })
			p.completion(t, s, p.client)
			require.Equal(t, msg, buf)
		}
		p.Close(t)
		require.NoError(t, p.client.eq.Close(), "EQ closes once its endpoint is gone")
	})
}

// requireShutdown requires x's next event to be eq.Shutdown for its
// endpoint, after which Shutdown succeeds again and sends fail with
// fi.ESHUTDOWN.
func (s *suite) requireShutdown(t testing.TB, x *peer) {
	t.Helper()
	sd := expectEvent[*eq.Shutdown](t, s, x.eq)
	requireSameFid(t, x.ep, sd.Fid, x.role+"'s Shutdown names its endpoint")
	require.NoError(t, x.cm.Shutdown(0), "%s: shutdown after the connection ended", x.role)
	if m, ok := x.ep.(ep.Msg); ok {
		require.ErrorIs(t, m.Send([]byte("x"), nil, fi.AddrUnspec, nil), fi.ESHUTDOWN,
			"%s: send after shutdown", x.role)
	}
}

// fixed is private data that does not depend on CMDataSize.
func fixed(data string) func(max int) []byte {
	return func(int) []byte { return []byte(data) }
}

// noData is no private data.
func noData(int) []byte { return nil }
