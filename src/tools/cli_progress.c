/* The CLI's progress bar (stderr, only on a terminal) and its one line per
 * completed transfer (stdout, as aws s3 prints them). The bar is fed by the
 * library's progress callback (s3r_client_set_progress). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tools/cli.h"

/* Transfers below this get no bar: they are over before one would help. */
#define BAR_MIN_BYTES (4u << 20)
/* Redraws at most this often (seconds). */
#define BAR_INTERVAL 0.1

/* One transfer's bar; the CLI runs one transfer at a time. */
static struct bar {
    char label[256];
    uint64_t total;
    double start, last_draw;
    bool drawn;
} bar;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "12.3 MiB" */
static void human(double bytes, char *out, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(out, len, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

static void on_progress(void *arg, uint64_t done, uint64_t total)
{
    (void)arg;
    double t = now_s();
    if (total == 0)
        total = bar.total;
    else if (total < BAR_MIN_BYTES)
        return; /* a download of unknown size turned out small */
    if (t - bar.last_draw < BAR_INTERVAL && done != total)
        return;
    bar.last_draw = t;
    double el = t - bar.start;
    double rate = el > 0 ? (double)done / el : 0;
    char d[32], tot[32], r[32], eta[32] = "--:--";
    human((double)done, d, sizeof(d));
    human((double)total, tot, sizeof(tot));
    human(rate, r, sizeof(r));
    if (rate > 0 && total >= done) {
        unsigned s = (unsigned)((double)(total - done) / rate);
        snprintf(eta, sizeof(eta), "%u:%02u", s / 60, s % 60);
    }
    int pct = total ? (int)(done * 100 / total) : 0;
    char fill[21];
    for (int i = 0; i < 20; i++)
        fill[i] = i < pct / 5 ? '#' : '.';
    fill[20] = '\0';
    fprintf(stderr, "\r\033[K%s [%s] %3d%% %s / %s  %s/s  ETA %s", bar.label, fill, pct, d, tot, r,
            eta);
    fflush(stderr);
    bar.drawn = true;
}

void cli_progress_begin(cli_t *cli, const char *label, uint64_t total)
{
    if (!cli->progress || (total != 0 && total < BAR_MIN_BYTES))
        return;
    /* Only ever drawn on a terminal: a key in the label shows no control characters. */
    snprintf(bar.label, sizeof(bar.label), "%s", label);
    bar.label[cli_mask_controls(bar.label, strlen(bar.label))] = '\0';
    bar.total = total;
    bar.start = now_s();
    bar.last_draw = 0;
    bar.drawn = false;
    s3r_client_set_progress(cli->client, on_progress, NULL);
}

void cli_progress_end(cli_t *cli)
{
    s3r_client_set_progress(cli->client, NULL, NULL);
    if (bar.drawn) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
        bar.drawn = false;
    }
}

void cli_done_line(const cli_t *cli, const char *what, const char *from, const char *to)
{
    if (cli->o.quiet)
        return;
    if (to != NULL)
        cli_line(stdout, "%s: %s to %s", what, from, to);
    else
        cli_line(stdout, "%s: %s", what, from);
    fflush(stdout);
}
