//go:build cgo && linux

package main

/*
#include "bridge.h"
*/
import "C"

import (
	"syscall"
	"unsafe"

	"github.com/gofabric/gofabric/eq"
	"github.com/gofabric/gofabric/fi"
)

// Address vectors (struct fi_ops_av). Addresses come packed in the
// domain's format: sockaddr_in (16 bytes), sockaddr_in6 (28), FI_SOCKADDR
// (either, by sa_family), FI_ADDR_STR (NUL-terminated strings one after
// the other).

// maxStrAddr bounds an FI_ADDR_STR address.
const maxStrAddr = 4096

// addrAt returns the address at p in format f (a view of C memory) and
// how many bytes it takes there.
func addrAt(f fi.AddrFormat, p unsafe.Pointer) ([]byte, uintptr, error) {
	if p == nil {
		return nil, 0, fi.EINVAL
	}
	n := uintptr(0)
	switch f {
	case fi.FormatSockaddrIn:
		n = syscall.SizeofSockaddrInet4
	case fi.FormatSockaddrIn6:
		n = syscall.SizeofSockaddrInet6
	case fi.FormatSockaddr:
		switch *(*uint16)(p) {
		case syscall.AF_INET:
			n = syscall.SizeofSockaddrInet4
		case syscall.AF_INET6:
			n = syscall.SizeofSockaddrInet6
		default:
			return nil, 0, badArg("sockaddr family %d", *(*uint16)(p))
		}
	case fi.FormatStr:
		b := strAddrAt(p, maxStrAddr)
		return b, uintptr(len(b)) + 1, nil
	default:
		return nil, 0, fi.ENOSYS
	}
	return unsafe.Slice((*byte)(p), n), n, nil
}

// goAVInsert is fi_av_insert: it returns the number of addresses
// inserted, or 0 and FI_AV_COMPLETE (and error) events on the bound EQ
// for an FI_EVENT AV. FI_SYNC_ERR writes each address's status to the
// int array context points to.
//
//export goAVInsert
func goAVInsert(h C.uintptr_t, addr unsafe.Pointer, count C.size_t, out *C.fi_addr_t, flags C.uint64_t, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_av_insert")
	a, _ := objOf(uintptr(h)).(*avObj)
	if a == nil || (count > 0 && addr == nil) {
		return -C.FI_EINVAL
	}
	syncErr := flags&C.FI_SYNC_ERR != 0
	if syncErr && ctx == nil {
		return -C.FI_EINVAL
	}
	a.mu.Lock()
	q := a.eq
	a.mu.Unlock()
	if a.async && q == nil {
		return -C.FI_ENOEQ
	}
	goFlags := fi.Flags(flags &^ (C.FI_SYNC_ERR | C.FI_MORE))
	var (
		outs []C.fi_addr_t
		errs []C.int
	)
	if out != nil {
		outs = unsafe.Slice(out, count)
	}
	if syncErr {
		errs = unsafe.Slice((*C.int)(ctx), count)
	}
	ok := 0
	p := addr
	var perr error // once an address cannot be parsed, the rest cannot be found
	for i := range int(count) {
		fa, err := fi.AddrUnspec, perr
		if err == nil {
			var b []byte
			var size uintptr
			if b, size, err = addrAt(a.format, p); err != nil {
				perr = err
			} else {
				p = unsafe.Add(p, size)
				var got []fi.Addr
				if got, err = a.av.Insert([][]byte{b}, goFlags); err == nil && len(got) == 1 {
					fa = got[0]
				}
			}
		}
		if outs != nil {
			outs[i] = C.fi_addr_t(fa)
		}
		code := fi.SUCCESS
		if err != nil || fa == fi.AddrUnspec {
			code = a.dom.fab.slot.code("av_insert", nilOr(err))
			if code == fi.SUCCESS {
				code = fi.EINVAL
			}
		} else {
			ok++
		}
		if errs != nil {
			errs[i] = C.int(code)
		}
		if code != fi.SUCCESS && a.async {
			q.poster.PostErr(&eq.EQError{Fid: a.av, Context: ctxOf(ctx), Data: uint64(i), Err: code})
		}
	}
	if a.async {
		q.poster.Post(&eq.AVComplete{Fid: a.av, Context: ctxOf(ctx), Data: uint64(ok)})
		return 0
	}
	return C.int(ok)
}

// goAVInsertSvc is fi_av_insertsvc: one address.
//
//export goAVInsertSvc
func goAVInsertSvc(h C.uintptr_t, node, service *C.char, out *C.fi_addr_t, flags C.uint64_t, ctx unsafe.Pointer) (rc C.int) {
	defer recoverInt(&rc, "fi_av_insertsvc")
	a, _ := objOf(uintptr(h)).(*avObj)
	if a == nil || node == nil {
		return -C.FI_EINVAL
	}
	a.mu.Lock()
	q := a.eq
	a.mu.Unlock()
	if a.async && q == nil {
		return -C.FI_ENOEQ
	}
	fa, err := a.av.InsertSvc(goStr(node), goStr(service), fi.Flags(flags&^(C.FI_SYNC_ERR|C.FI_MORE)))
	if out != nil {
		*out = C.fi_addr_t(fa)
	}
	ok := 1
	if err != nil {
		code := a.dom.fab.slot.code("av_insertsvc", err)
		if flags&C.FI_SYNC_ERR != 0 && ctx != nil {
			*(*C.int)(ctx) = C.int(code)
		}
		if !a.async {
			return 0
		}
		q.poster.PostErr(&eq.EQError{Fid: a.av, Context: ctxOf(ctx), Err: code})
		ok = 0
	}
	if a.async {
		q.poster.Post(&eq.AVComplete{Fid: a.av, Context: ctxOf(ctx), Data: uint64(ok)})
		return 0
	}
	return 1
}

// goAVRemove is fi_av_remove.
//
//export goAVRemove
func goAVRemove(h C.uintptr_t, addrs *C.fi_addr_t, count C.size_t, flags C.uint64_t) (rc C.int) {
	defer recoverInt(&rc, "fi_av_remove")
	a, _ := objOf(uintptr(h)).(*avObj)
	if a == nil || (addrs == nil && count > 0) {
		return -C.FI_EINVAL
	}
	fas := make([]fi.Addr, count)
	for i, v := range unsafe.Slice(addrs, count) {
		fas[i] = fi.Addr(v)
	}
	if err := a.av.Remove(fas, fi.Flags(flags)); err != nil {
		return -C.int(a.dom.fab.slot.code("av_remove", err))
	}
	return 0
}

// goAVLookup is fi_av_lookup: *addrlen is set to the address's full size,
// with -FI_ETOOSMALL when the buffer is shorter.
//
//export goAVLookup
func goAVLookup(h C.uintptr_t, fa C.fi_addr_t, addr unsafe.Pointer, addrlen *C.size_t) (rc C.int) {
	defer recoverInt(&rc, "fi_av_lookup")
	a, _ := objOf(uintptr(h)).(*avObj)
	if a == nil || addrlen == nil {
		return -C.FI_EINVAL
	}
	var buf [maxStrAddr]byte
	n, err := a.av.Lookup(fi.Addr(fa), buf[:])
	if err != nil {
		return -C.int(a.dom.fab.slot.code("av_lookup", err))
	}
	need := copyAddrC(a.format, buf[:n], addr, int(*addrlen))
	given := *addrlen
	*addrlen = C.size_t(need)
	if C.size_t(need) > given {
		return -C.FI_ETOOSMALL
	}
	return 0
}

// goAVStraddr is fi_av_straddr: the address in buf, truncated to *len
// bytes with its NUL; *len is set to the size it needs.
//
//export goAVStraddr
func goAVStraddr(h C.uintptr_t, addr unsafe.Pointer, buf *C.char, n *C.size_t) (s *C.char) {
	defer recoverZero(&s, "fi_av_straddr")
	a, _ := objOf(uintptr(h)).(*avObj)
	if a == nil || n == nil {
		return nil
	}
	b, _, err := addrAt(a.format, addr)
	if err != nil {
		return nil
	}
	str := a.av.StrAddr(b)
	copyAddrC(fi.FormatStr, []byte(str), unsafe.Pointer(buf), int(*n))
	*n = C.size_t(len(str) + 1)
	return buf
}
