/*
 * udpfloor.c: the C side of scripts/udpfloor (read its doc comment, in
 * main.go): a ping-pong of datagrams over loopback made of system calls
 * alone, sendto(2) and then recvfrom(2) on a non-blocking socket until the
 * answer is there, as the Go side makes them. Same
 * options, control exchange, warm-up and output as the Go side, so that
 * scripts/bench-compare.sh runs the two against each other:
 *
 *   gcc -O2 -o udpfloor-c scripts/udpfloor/c/udpfloor.c
 *   scripts/bench-compare.sh -p udp -e dgram -C ./udpfloor-c -G ./udpfloor-go
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { WARMUP = 10, STALL_SEC = 10 };

static int fd = -1, size = 64;
static struct sockaddr_in peer;
static char buf[65536];

static void die(const char *what)
{
	fprintf(stderr, "udpfloor: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_sec(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* send is one sendto(2) of size bytes to the peer. */
static void send_one(void)
{
	while (sendto(fd, buf, size, 0, (struct sockaddr *)&peer, sizeof(peer)) < 0) {
		if (errno != EINTR && errno != EAGAIN && errno != ENOBUFS)
			die("sendto");
	}
}

/* recv_one calls recvfrom(2), taking the sender's address, until a
 * datagram is there. */
static void recv_one(void)
{
	struct sockaddr_in6 from;
	socklen_t len;
	double deadline = 0;
	unsigned long polls;

	for (polls = 1;; polls++) {
		len = sizeof(from);
		if (recvfrom(fd, buf, sizeof(buf), MSG_TRUNC, (struct sockaddr *)&from, &len) >= 0)
			return;
		if (errno != EAGAIN && errno != EINTR)
			die("recvfrom");
		if (polls % 65536 == 0) {
			if (deadline == 0)
				deadline = now_sec() + STALL_SEC;
			else if (now_sec() > deadline) {
				fprintf(stderr, "udpfloor: no datagram for %d s\n", STALL_SEC);
				exit(1);
			}
		}
	}
}

static void loop(long n, int client)
{
	for (long i = 0; i < n; i++) {
		if (client)
			send_one();
		recv_one();
		if (!client)
			send_one();
	}
}

/* ctrl_setup connects to (client) or accepts on (server) the TCP port. */
static int ctrl_setup(int client, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s, c, one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		die("socket");
	if (client) {
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
			die("connect");
		return s;
	}
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 1) < 0)
		die("listen");
	c = accept(s, NULL, NULL);
	if (c < 0)
		die("accept");
	close(s);
	return c;
}

int main(int argc, char **argv)
{
	struct sockaddr_in me = { .sin_family = AF_INET };
	socklen_t len = sizeof(me);
	int opt, srv_port = 0, dst_port = 0, client, ctrl;
	long iters = 1000;
	uint16_t mine, theirs;
	double start, us;

	while ((opt = getopt(argc, argv, "p:e:S:I:B:P:")) != -1) {
		switch (opt) {
		case 'p':
		case 'e':
			if (strcmp(optarg, opt == 'p' ? "udp" : "dgram")) {
				fprintf(stderr, "udpfloor: only -p udp -e dgram\n");
				return 2;
			}
			break;
		case 'S': size = atoi(optarg); break;
		case 'I': iters = atol(optarg); break;
		case 'B': srv_port = atoi(optarg); break;
		case 'P': dst_port = atoi(optarg); break;
		default: return 2;
		}
	}
	if (size < 1 || size > 65507 || iters < 1 || !srv_port == !dst_port ||
	    (dst_port && (optind >= argc || strcmp(argv[optind], "127.0.0.1")))) {
		fprintf(stderr, "usage: udpfloor [-S size] [-I iters] -B port | -P port 127.0.0.1\n");
		return 2;
	}
	client = dst_port != 0;
	ctrl = ctrl_setup(client, client ? dst_port : srv_port);

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&me, sizeof(me)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&me, &len) < 0)
		die("datagram socket");
	mine = me.sin_port; /* network order on both ends */
	if (write(ctrl, &mine, 2) != 2 || recv(ctrl, &theirs, 2, MSG_WAITALL) != 2)
		die("port exchange");
	peer.sin_family = AF_INET;
	peer.sin_port = theirs;
	peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	loop(WARMUP, client);
	start = now_sec();
	loop(iters, client);
	us = (now_sec() - start) * 1e6;
	if (client) {
		char t[32];

		snprintf(t, sizeof(t), "%.2fs", us / 1e6);
		printf("%-8s%-8s%-9s%-12s%-11s%-11s%-12s%s\n", "bytes", "#sent", "#ack", "total", "time", "MB/sec",
		       "usec/xfer", "Mxfers/sec");
		printf("%-8d%-8ld=%-8ld%-12ld%-11s%-11.2f%-12.2f%.2f\n", size, iters, iters, 2 * iters * size, t,
		       2.0 * iters * size / us, us / 2 / iters, 2.0 * iters / us);
	}
	close(fd);
	close(ctrl);
	return 0;
}
