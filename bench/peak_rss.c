/* peak_rss.c - run a command and report its peak resident set size.
 *
 * usage: peak_rss OUT cmd [args...]
 *
 * bench/peers.py times every run through this launcher.  A process's peak
 * RSS as the kernel reports it (ru_maxrss) starts from its parent's at the
 * fork and survives exec, so measured straight from the Python runner every
 * tool would show at least the runner's own peak.  This launcher is small:
 * the command it forks starts from next to nothing.  ru_maxrss of the
 * command and every descendant it waited for, in KiB, is written to OUT.
 * Exits with the command's status, or 128 + the signal that killed it;
 * 127 if it could not be started.
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: peak_rss OUT cmd [args...]\n");
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("peak_rss: fork");
		return 127;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	int status;
	struct rusage usage;
	if (wait4(pid, &status, 0, &usage) < 0) {
		perror("peak_rss: wait4");
		return 127;
	}
	FILE *out = fopen(argv[1], "w");
	if (!out || fprintf(out, "%ld\n", usage.ru_maxrss) < 0 || fclose(out) != 0) {
		perror(argv[1]);
		return 127;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
