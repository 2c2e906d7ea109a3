/* export_perfetto_packets.c - the perfetto exporter's packet writer:
 * packets appended to a batch buffer of c->cap bytes, each batch written
 * out as it is or deflated (ISA-L, else libdeflate, else zlib: the same
 * zlib stream)
 * into one packet's compressed_packets
 * (field 50), which the trace processor inflates and reads as the packets
 * themselves; and the packets that start a sequence or describe a child
 * track, which every part of the exporter writes (export_perfetto.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_perfetto.h"

static void pf_write_out(struct perfetto *c, const uint8_t *p, size_t n)
{
	if (n && !c->err && fwrite(p, 1, n, c->out) != n)
		c->err = -EIO;
}

#ifdef ULMA_PERFETTO_COMPRESS
/* A compressed batch, as one packet's compressed_packets. */
static void pf_write_compressed(struct perfetto *c, size_t n)
{
	uint8_t head[2 * ULMA_PB_FIELD_MAX];
	uint8_t *e = ulma_pb_varint(ulma_pb_key(head, PKT_COMPRESSED, ULMA_PB_BYTES), n);
	size_t inner = (size_t)(e - head) + n;
	uint8_t outer[ULMA_PB_FIELD_MAX];
	uint8_t *f = ulma_pb_varint(ulma_pb_key(outer, TRACE_PACKET, ULMA_PB_BYTES), inner);
	pf_write_out(c, outer, (size_t)(f - outer));
	pf_write_out(c, head, (size_t)(e - head));
	pf_write_out(c, c->zbuf, n);
}
#endif

#if defined(ULMA_HAVE_ISAL)
/* ISA-L's deflate at level 1: 1.5 times as fast as libdeflate's on the
 * packets, 10-20% larger (docs/exports.md).  A batch never grows by more
 * than a stored block's header (ISA-L falls back to stored blocks), so
 * its output room is the batch and some. */
#define ISAL_LEVEL 1
#define ISAL_LEVEL_BUF ISAL_DEF_LVL1_DEFAULT

int pf_deflate_start(struct perfetto *c, const struct ulma_export_opts *o)
{
	if (o->no_compress)
		return 0;
	c->zcap = OUT_CAP + OUT_CAP / 16 + 1024;
	c->level_buf = malloc(ISAL_LEVEL_BUF);
	c->zbuf = malloc(c->zcap);
	if (!c->level_buf || !c->zbuf) {
		free(c->level_buf);
		free(c->zbuf);
		c->level_buf = c->zbuf = NULL;
		return -ENOMEM;
	}
	return 0;
}

void pf_deflate_end(struct perfetto *c)
{
	free(c->level_buf);
	free(c->zbuf);
}

/* The batch, deflated into a zlib stream, as one packet's
 * compressed_packets. */
void pf_flush(struct perfetto *c)
{
	if (!c->level_buf || !c->len) {
		pf_write_out(c, c->buf, c->len);
		c->len = 0;
		return;
	}
	struct isal_zstream z;
	isal_deflate_stateless_init(&z);
	z.level = ISAL_LEVEL;
	z.level_buf = c->level_buf;
	z.level_buf_size = ISAL_LEVEL_BUF;
	z.gzip_flag = IGZIP_ZLIB;
	z.end_of_stream = 1;
	z.flush = NO_FLUSH;
	z.next_in = c->buf;
	z.avail_in = (uint32_t)c->len;
	z.next_out = c->zbuf;
	z.avail_out = (uint32_t)c->zcap;
	int rc = isal_deflate_stateless(&z);
	c->len = 0;
	if (rc != COMP_OK) { /* cannot happen with the room given */
		c->err = c->err ? c->err : -ENOMEM;
		return;
	}
	pf_write_compressed(c, c->zcap - z.avail_out);
}
#elif defined(ULMA_HAVE_LIBDEFLATE)
/* Start compressing, if the options ask for it. */
int pf_deflate_start(struct perfetto *c, const struct ulma_export_opts *o)
{
	if (o->no_compress)
		return 0;
	c->deflater = libdeflate_alloc_compressor(DEFLATE_LEVEL);
	if (!c->deflater)
		return -ENOMEM;
	c->zcap = libdeflate_zlib_compress_bound(c->deflater, OUT_CAP);
	c->zbuf = malloc(c->zcap);
	if (!c->zbuf) {
		libdeflate_free_compressor(c->deflater);
		c->deflater = NULL;
		return -ENOMEM;
	}
	return 0;
}

void pf_deflate_end(struct perfetto *c)
{
	if (c->deflater)
		libdeflate_free_compressor(c->deflater);
	free(c->zbuf);
}

/* The batch, deflated (a zlib stream, as zlib writes it), as one packet's
 * compressed_packets. */
void pf_flush(struct perfetto *c)
{
	if (!c->deflater || !c->len) {
		pf_write_out(c, c->buf, c->len);
		c->len = 0;
		return;
	}
	size_t n = libdeflate_zlib_compress(c->deflater, c->buf, c->len, c->zbuf, c->zcap);
	c->len = 0;
	if (!n) { /* cannot happen with the bound's room */
		c->err = c->err ? c->err : -ENOMEM;
		return;
	}
	pf_write_compressed(c, n);
}
#elif defined(ULMA_HAVE_ZLIB)
/* Start compressing, if the options ask for it; false when they don't. */
int pf_deflate_start(struct perfetto *c, const struct ulma_export_opts *o)
{
	if (o->no_compress)
		return 0;
	if (deflateInit(&c->z, DEFLATE_LEVEL) != Z_OK)
		return -ENOMEM;
	c->zcap = deflateBound(&c->z, OUT_CAP);
	c->zbuf = malloc(c->zcap);
	if (!c->zbuf) {
		deflateEnd(&c->z);
		return -ENOMEM;
	}
	c->deflating = true;
	return 0;
}

void pf_deflate_end(struct perfetto *c)
{
	if (c->deflating)
		deflateEnd(&c->z);
	free(c->zbuf);
}

/* The batch, deflated, as one packet's compressed_packets. */
void pf_flush(struct perfetto *c)
{
	if (!c->deflating || !c->len) {
		pf_write_out(c, c->buf, c->len);
		c->len = 0;
		return;
	}
	c->z.next_in = c->buf;
	c->z.avail_in = (uInt)c->len;
	c->z.next_out = c->zbuf;
	c->z.avail_out = (uInt)c->zcap;
	int rc = deflate(&c->z, Z_FINISH);
	size_t n = c->zcap - c->z.avail_out;
	deflateReset(&c->z);
	c->len = 0;
	if (rc != Z_STREAM_END) {
		c->err = c->err ? c->err : -ENOMEM;
		return;
	}
	pf_write_compressed(c, n);
}
#else
int pf_deflate_start(struct perfetto *c, const struct ulma_export_opts *o)
{
	(void)c;
	(void)o;
	return 0;
}

void pf_deflate_end(struct perfetto *c)
{
	(void)c;
}

void pf_flush(struct perfetto *c)
{
	pf_write_out(c, c->buf, c->len);
	c->len = 0;
}
#endif

/* Append a packet whose body is body[0..n). */
void pf_put_packet(struct perfetto *c, const uint8_t *body, size_t n)
{
	uint8_t head[ULMA_PB_FIELD_MAX];
	uint8_t *e = ulma_pb_varint(ulma_pb_key(head, TRACE_PACKET, ULMA_PB_BYTES), n);
	size_t h = (size_t)(e - head);
	if (c->len + h + n > c->cap)
		pf_flush(c);
	if (h + n > c->cap) { /* a big descriptor: straight out */
		if (!c->err && (fwrite(head, 1, h, c->out) != h || fwrite(body, 1, n, c->out) != n))
			c->err = -EIO;
		return;
	}
	memcpy(c->buf + c->len, head, h);
	memcpy(c->buf + c->len + h, body, n);
	c->len += h + n;
}

void pf_put_packet_sbuf(struct perfetto *c, struct ulma_sbuf *p)
{
	if (p->nomem)
		c->err = c->err ? c->err : -ENOMEM;
	else
		pf_put_packet(c, (const uint8_t *)p->p, p->len);
}

/* A ClockSnapshot into packet p: clock `other` reads ns where MONOTONIC,
 * the trace's primary clock, does (incremental: a sequence's own). */
void pf_put_clock_snapshot(struct ulma_sbuf *p, uint64_t ns, uint32_t other, bool incremental)
{
	struct ulma_sbuf m = {0}, n = {0};
	ulma_pb_put_uint(&n, CLOCK_ID, other);
	ulma_pb_put_uint(&n, CLOCK_TIMESTAMP, ns);
	if (incremental)
		ulma_pb_put_uint(&n, CLOCK_INCREMENTAL, 1);
	ulma_pb_put_message(&m, SNAP_CLOCKS, &n);
	n.len = 0;
	ulma_pb_put_uint(&n, CLOCK_ID, CLOCK_MONOTONIC_ID);
	ulma_pb_put_uint(&n, CLOCK_TIMESTAMP, ns);
	ulma_pb_put_message(&m, SNAP_CLOCKS, &n);
	ulma_pb_put_uint(&m, SNAP_PRIMARY, CLOCK_MONOTONIC_ID);
	ulma_pb_put_message(p, PKT_CLOCK_SNAPSHOT, &m);
	ulma_sbuf_free(&m);
	ulma_sbuf_free(&n);
}

/* The first packet of a sequence: incremental state cleared, the defaults
 * (the track and the incremental clock), the clock's tie to MONOTONIC, and
 * the interned names every packet may use. */
void pf_start_sequence(struct perfetto *c, const struct ulma_walk *w, uint32_t seq, uint64_t track,
			   uint32_t names_field, const char *const *names, uint32_t nnames)
{
	struct ulma_sbuf p = {0}, m = {0}, n = {0};
	ulma_pb_put_uint(&p, PKT_SEQUENCE_ID, seq);
	ulma_pb_put_uint(&p, PKT_SEQUENCE_FLAGS, SEQ_CLEARED);
	ulma_pb_put_uint(&n, TED_TRACK_UUID, track);
	ulma_pb_put_uint(&m, DEF_CLOCK_ID, CLOCK_INCREMENTAL_ID);
	ulma_pb_put_message(&m, DEF_TRACK_EVENT, &n);
	ulma_pb_put_message(&p, PKT_DEFAULTS, &m);
	m.len = 0;
	for (uint32_t i = 1; i < nnames; i++) {
		n.len = 0;
		ulma_pb_put_uint(&n, INTERNED_IID, i);
		ulma_pb_put_string(&n, INTERNED_NAME, names[i]);
		ulma_pb_put_message(&m, names_field, &n);
	}
	ulma_pb_put_message(&p, PKT_INTERNED_DATA, &m);
	/* the incremental clock counts from the trace start, as MONOTONIC does */
	pf_put_clock_snapshot(&p, w->start_ns, CLOCK_INCREMENTAL_ID, true);
	pf_put_packet_sbuf(c, &p);
	ulma_sbuf_free(&p);
	ulma_sbuf_free(&m);
	ulma_sbuf_free(&n);
}

/* A named track under parent (a process's counter, a thread's state). */
void pf_child_descriptor(struct perfetto *c, uint64_t uuid, uint64_t parent, const char *name, bool counter)
{
	struct ulma_sbuf p = {0}, d = {0};
	ulma_pb_put_uint(&d, TD_UUID, uuid);
	ulma_pb_put_uint(&d, TD_PARENT, parent);
	ulma_pb_put_string(&d, TD_NAME, name);
	if (counter)
		ulma_pb_put_bytes(&d, TD_COUNTER, "", 0);
	ulma_pb_put_message(&p, PKT_TRACK_DESCRIPTOR, &d);
	pf_put_packet_sbuf(c, &p);
	ulma_sbuf_free(&p);
	ulma_sbuf_free(&d);
}


void pf_put_track_event(struct perfetto *c, uint64_t seq, uint64_t delta, const uint8_t *te, size_t n)
{
	uint8_t body[96], *p;
	if (n > sizeof(body) - 3 * ULMA_PB_FIELD_MAX) {
		c->err = c->err ? c->err : -EINVAL;
		return;
	}
	p = ulma_pb_uint(body, PKT_SEQUENCE_ID, seq);
	p = ulma_pb_uint(p, PKT_TIMESTAMP, delta);
	p = ulma_pb_varint(ulma_pb_key(p, PKT_TRACK_EVENT, ULMA_PB_BYTES), n);
	memcpy(p, te, n);
	pf_put_packet(c, body, (size_t)(p + n - body));
}
