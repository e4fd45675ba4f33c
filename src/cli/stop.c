/* SIGINT and SIGTERM as the stop flag of a long-running command (cli.h). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <string.h>

#include "cli/cli.h"

static atomic_bool *g_flag; /* set before the handlers are, never after */

static void on_signal(int sig) {
    (void)sig;
    atomic_store(g_flag, true);
}

void osp_cli_stop_on_signals(atomic_bool *stop) {
    g_flag = stop;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}
