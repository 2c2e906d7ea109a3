/* test_session_mode.c - a new session's memfd is mode 0600, as
 * docs/design.md says: memfd_create makes it 0777, and /proc/<pid>/fd/<n>
 * (which followed children open) checks that mode besides ptrace access. */
#include <sys/stat.h>

#include "core/session.h"
#include "tap.h"

int main(void)
{
	struct ulma_session_config cfg;
	struct ulma_session s;
	struct stat st;
	ulma_session_config_default(&cfg);
	cfg.slot_count = 2;
	cfg.ring_records = 64;
	cfg.defs_size = 4096;
	if (!CHECK(ulma_session_create(&cfg, &s) == 0, "session created"))
		return tap_done();
	if (CHECK(fstat(s.fd, &st) == 0, "fstat of the memfd"))
		CHECK((st.st_mode & 07777) == 0600, "memfd mode 0600 (is %o)", (unsigned)(st.st_mode & 07777));
	ulma_session_unmap(&s);
	return tap_done();
}
