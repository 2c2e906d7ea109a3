/* safe_file.h - create an output file without writing through whatever a
 * hostile or careless hand left at its path.
 *
 * `open(path, O_CREAT|O_TRUNC)` follows a symlink and truncates a hard
 * link's other names: in a shared directory, another user who plants
 * `ulma.trace -> ~/thesis.tex` gets the victim's file overwritten.
 * ulma_safe_create instead makes a new file under a random name in the
 * same directory (O_CREAT|O_EXCL|O_NOFOLLOW) and renames it onto the path
 * at once.  rename replaces the directory entry itself: a symlink or hard
 * link there loses that name, and the file it pointed at is untouched.
 * The file is at its final name before anything is written to it, so the
 * writer still grows it in place and every prefix stays readable if the
 * writer dies.
 *
 * An existing character device or FIFO owned by the caller or root (say
 * `-o /dev/null`) is written into as it is, never replaced: nothing is
 * created and nothing truncated.
 */
#ifndef ULMA_SAFE_FILE_H
#define ULMA_SAFE_FILE_H

#include <stdbool.h>
#include <sys/types.h>

/* Create path anew for writing (mode, less the umask, as open would).
 * Returns a close-on-exec, write-only descriptor, or -errno: -EISDIR for a
 * directory, -EPERM when the entry there belongs to another user in a
 * sticky directory (it cannot be replaced, and is not written through). */
int ulma_safe_create(const char *path, mode_t mode);

/* Open path for writing if it is a device or FIFO of the caller's or
 * root's (never through a symlink), as ulma_safe_create does: commands
 * that write a complete file and rename it into place must write into
 * such a path instead, or the rename would replace `/dev/null` with a
 * file.  Returns the descriptor, -ENOENT when path is no such thing (make
 * a file), or -errno. */
int ulma_open_special(const char *path);

/* Remove what ulma_safe_create made at path, when a command gives up before
 * its output is worth keeping: a regular file only.  A device or FIFO that
 * was written into (`-o /dev/null`) is not ours to remove. */
void ulma_safe_discard(const char *path);

/* Would writing output replace or overwrite the regular file `input`?  True
 * when output exists and is that file (same device and inode), itself, by
 * a hard link, or through symlinks; relative and absolute spellings alike.
 * Commands check it before writing anything: a trace must not replace the
 * script it traces, nor an export the trace it reads. */
bool ulma_same_file(const char *output, const char *input);

#endif
