/*
 * pocketsphinx-stream: the embedded recogniser's streaming helper (providers/pocketsphinx/).
 *
 * Why: Debian's pocketsphinx_continuous (0.8+5prealpha) prints a hypothesis only once its own
 * VAD has closed a segment, and one process takes one audio stream. This helper links the same
 * library (libpocketsphinx3) so that each utterance is decoded while it is spoken: its audio is
 * fed to a decoder as it arrives (ps_process_raw), the hypothesis so far (ps_get_hyp) is sent back
 * whenever it changes, and at the end only the audio's tail and the second pass are left.
 *
 * How several utterances are decoded at once without a model per utterance: this process loads
 * ONE decoder (models, dictionary, language model: ~95 MB, 0.3 s) and forks a child per
 * utterance. The child shares every page of the loaded decoder with this process (copy on write)
 * and owns only what decoding writes (~20 MB with the open language model, next to nothing with a
 * grammar); it exits when its utterance ends. A decoder per utterance in one process would cost
 * 60-90 MB each (measured); a process per utterance loading its own models, the same plus 0.3 s.
 *
 * What carries from one utterance to the next is what pocketsphinx_continuous carries: the
 * cepstral mean (live CMN), the estimate of the microphone's and room's colour that normalises
 * the features. pocketsphinx 0.8 updates it only at the end of an utterance, so a decoder that
 * always started from the model's initial mean would decode every utterance un-adapted (measured:
 * 3 of 6 test sentences wrong against 5 of 6). Each child sends its updated mean back before it
 * exits, and the next children start from it.
 *
 * Usage: pocketsphinx-stream NICE [pocketsphinx arguments: -hmm, -dict, -lm, -jsgf…]
 * The children run at niceness NICE. How many utterances run at once is the caller's to bound
 * (it counts an utterance from 'O' to its 'R' or 'E', or its 'C'); this process refuses more than
 * 1024 children alive.
 * Frames in both directions: [u8 kind][u32 id][u32 byte count][bytes], little-endian.
 *   in   'O' open utterance id          'A' mono s16 PCM at 16 kHz for id
 *        'F' finish id (final wanted)   'C' cancel id (its child is killed; nothing comes back)
 *   out  'Y' ready (id 0), once the decoder has loaded
 *        'P' partial hypothesis of id   'R' final hypothesis of id (its child then exits)
 *        'E' error about id (text: why; the utterance is over)
 * Every frame out is one write of at most PIPE_BUF bytes, so the children's frames never
 * interleave on the shared stdout. A malformed frame in (unknown kind, a payload over 1 MiB or of
 * odd length) ends the helper with exit code 3: its caller is broken. It exits when stdin ends
 * and dies with its parent (PR_SET_PDEATHSIG), as do its children with it.
 *
 * Only the runtime libraries (libpocketsphinx3, libsphinxbase3) are needed: the entry points used
 * are declared below instead of including the -dev packages' headers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct cmd_ln_s cmd_ln_t;
typedef struct arg_s arg_t;
typedef struct ps_decoder_s ps_decoder_t;
typedef void (*err_cb_f)(void *user_data, int level, const char *fmt, ...);
extern arg_t const *ps_args(void);
extern cmd_ln_t *cmd_ln_parse_r(cmd_ln_t *inout, arg_t const *defn, int32_t argc, char *argv[], int32_t strict);
extern void ps_default_search_args(cmd_ln_t *config);
extern ps_decoder_t *ps_init(cmd_ln_t *config);
extern int ps_start_utt(ps_decoder_t *ps);
extern int ps_process_raw(ps_decoder_t *ps, const int16_t *data, size_t n, int no_search, int full_utt);
extern int ps_end_utt(ps_decoder_t *ps);
extern const char *ps_get_hyp(ps_decoder_t *ps, int32_t *out_best_score);
extern void err_set_callback(err_cb_f callback, void *user_data);
extern void err_set_logfp(FILE *stream);

/* The cepstral mean (CMN) of the decoder's features, from sphinxbase's public headers (feat.h,
   cmn.h of 0.8+5prealpha; float features, no FIXED_POINT): only the leading fields up to the one
   used are declared, in their order. */
typedef struct {
  float *cmn_mean, *cmn_var, *sum;
  int32_t nframe, veclen;
} cmn_t;
typedef struct {
  int refcount;
  char *name;
  int32_t cepsize, n_stream;
  uint32_t *stream_len;
  int32_t window_size, n_sv;
  uint32_t *sv_len;
  int32_t **subvecs;
  float *sv_buf;
  int32_t sv_dim;
  int cmn;
  int32_t varnorm;
  int agc;
  void (*compute_feat)(void *fcb, float **input, float **feat);
  cmn_t *cmn_struct;
} feat_prefix_t;
extern feat_prefix_t *ps_get_feat(ps_decoder_t *ps);
extern void cmn_live_get(cmn_t *cmn, float *vec);
extern void cmn_live_set(cmn_t *cmn, const float *vec);

enum { ERR_WARN = 3, HEAD = 9, MAX_PAYLOAD = 1 << 20, MAX_TEXT = PIPE_BUF - HEAD, MAX_CHILDREN = 1024, MAX_CEP = 64 };
/* What a child may have waiting in this process beyond its pipe (1 MiB = 32 s of audio): past
   it the child is too far behind to be useful, and is ended with an error. */
enum { MAX_BACKLOG = 4 << 20, CHILD_PIPE_BYTES = 1 << 20 };

static ps_decoder_t *ps;

/* The library's INFO lines (hundreds per decoder) are dropped; warnings and errors reach stderr,
   whose tail the caller keeps for its error messages. */
static void on_log(void *user, int level, const char *fmt, ...) {
  (void)user;
  if (level < ERR_WARN) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

/* One frame, one write(2) of at most PIPE_BUF bytes: atomic on a pipe, whoever else writes. */
static void send_frame(char kind, uint32_t id, const char *text) {
  unsigned char buf[PIPE_BUF];
  size_t len = text ? strlen(text) : 0;
  if (len > MAX_TEXT) {
    len = MAX_TEXT;
    while (len > 0 && text[len] != ' ') len--; /* whole words (and whole UTF-8 characters) only */
  }
  uint32_t l = (uint32_t)len;
  buf[0] = (unsigned char)kind;
  memcpy(buf + 1, &id, 4); /* little-endian hosts only (amd64, arm64) */
  memcpy(buf + 5, &l, 4);
  if (len > 0) memcpy(buf + HEAD, text, len);
  for (;;) {
    ssize_t w = write(1, buf, HEAD + len);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) _exit(0); /* the owner is gone */
    return;
  }
}

static int read_all(int fd, void *data, size_t n) {
  char *p = data;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    p += r;
    n -= (size_t)r;
  }
  return 1;
}

/* ---------------- a child: one utterance ---------------- */

static int16_t payload[MAX_PAYLOAD / 2];

static int input_waiting(int fd) {
  struct pollfd p = {fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

static cmn_t *decoder_cmn(void) {
  feat_prefix_t *feat = ps_get_feat(ps);
  cmn_t *cmn = feat ? feat->cmn_struct : NULL;
  return cmn && cmn->veclen > 0 && cmn->veclen <= MAX_CEP ? cmn : NULL;
}

static void run_utterance(int in, int back, uint32_t id) {
  char last[MAX_TEXT + 1] = "";
  if (ps_start_utt(ps) < 0) {
    send_frame('E', id, "ps_start_utt failed");
    _exit(1);
  }
  unsigned char head[HEAD];
  while (read_all(in, head, HEAD)) {
    uint32_t len;
    memcpy(&len, head + 5, 4);
    if (len > 0 && !read_all(in, payload, len)) break;
    if (head[0] == 'F') {
      /* An utterance the VAD found no speech in has no frames: its result is empty, not an error. */
      ps_end_utt(ps);
      cmn_t *cmn = decoder_cmn();
      if (cmn) {
        float mean[MAX_CEP];
        cmn_live_get(cmn, mean);
        /* At most 256 bytes into an empty pipe: never blocks, arrives whole. */
        ssize_t ignored = write(back, mean, (size_t)cmn->veclen * sizeof(float));
        (void)ignored;
      }
      const char *hyp = ps_get_hyp(ps, NULL);
      send_frame('R', id, hyp ? hyp : "");
      _exit(0);
    }
    if (ps_process_raw(ps, payload, len / 2, 0, 0) < 0) {
      send_frame('E', id, "ps_process_raw failed");
      _exit(1);
    }
    /* Behind the audio (more is waiting)? Decode it first: a partial is only worth its cost when
       it describes the latest audio. */
    if (input_waiting(in)) continue;
    const char *hyp = ps_get_hyp(ps, NULL);
    if (!hyp) hyp = "";
    if (strncmp(hyp, last, MAX_TEXT) != 0) {
      snprintf(last, sizeof last, "%s", hyp);
      send_frame('P', id, last);
    }
  }
  _exit(0); /* cancelled: the input closed without 'F' */
}

/* ---------------- the template: routes frames to children ---------------- */

typedef struct {
  int used, cancelled, finishing;
  uint32_t id;
  pid_t pid;
  int fd;   /* the write end of the child's input, non-blocking; -1 once closed */
  int back; /* the read end of the child's cepstral mean, read once it has exited */
  unsigned char *buf;
  size_t len, cap;
} child_t;

static child_t kids[MAX_CHILDREN];
static int nice_level;
static int sig_pipe[2];

static void on_sigchld(int sig) {
  (void)sig;
  int e = errno;
  ssize_t ignored = write(sig_pipe[1], "c", 1);
  (void)ignored;
  errno = e;
}

static child_t *find(uint32_t id) {
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (kids[i].used && !kids[i].cancelled && kids[i].id == id) return &kids[i];
  return NULL;
}

static void close_input(child_t *k) {
  if (k->fd >= 0) close(k->fd);
  k->fd = -1;
  free(k->buf);
  k->buf = NULL;
  k->len = k->cap = 0;
}

static void flush(child_t *k) {
  while (k->fd >= 0 && k->len > 0) {
    ssize_t w = write(k->fd, k->buf, k->len);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) return;
    if (w < 0) { /* the child died: its reaping reports it */
      close_input(k);
      return;
    }
    memmove(k->buf, k->buf + w, k->len - (size_t)w);
    k->len -= (size_t)w;
  }
  if (k->fd >= 0 && k->len == 0 && k->finishing) close_input(k);
}

static void forward(child_t *k, const unsigned char *head, const void *data, uint32_t len) {
  if (k->fd < 0) return;
  if (k->len + HEAD + len > MAX_BACKLOG) {
    send_frame('E', k->id, "the decoder is too far behind the audio");
    kill(k->pid, SIGKILL);
    k->cancelled = 1;
    close_input(k);
    return;
  }
  if (k->len + HEAD + len > k->cap) {
    size_t cap = k->cap ? k->cap : 65536;
    while (cap < k->len + HEAD + len) cap *= 2;
    unsigned char *b = realloc(k->buf, cap);
    if (!b) {
      fprintf(stderr, "pocketsphinx-stream: out of memory\n");
      _exit(1);
    }
    k->buf = b;
    k->cap = cap;
  }
  memcpy(k->buf + k->len, head, HEAD);
  if (len > 0) memcpy(k->buf + k->len + HEAD, data, len);
  k->len += HEAD + len;
  flush(k);
}

static void open_utterance(uint32_t id) {
  if (find(id)) {
    send_frame('E', id, "utterance already open");
    return;
  }
  child_t *k = NULL;
  for (int i = 0; i < MAX_CHILDREN && !k; i++)
    if (!kids[i].used) k = &kids[i];
  if (!k) {
    send_frame('E', id, "too many utterances at once");
    return;
  }
  int p[2], b[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    send_frame('E', id, "pipe failed");
    return;
  }
  if (pipe2(b, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(p[0]);
    close(p[1]);
    send_frame('E', id, "pipe failed");
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    close(b[0]);
    close(b[1]);
    send_frame('E', id, "fork failed");
    return;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) _exit(1); /* the template died between fork and prctl */
    signal(SIGCHLD, SIG_DFL);
    setpriority(PRIO_PROCESS, 0, nice_level);
    close(0);
    close(p[1]);
    close(b[0]);
    /* The other children's pipes are this child's copies too: closed on exec only, so close
       them here, or a cancelled child's input would never reach end of file. */
    for (int i = 0; i < MAX_CHILDREN; i++) {
      if (!kids[i].used) continue;
      if (kids[i].fd >= 0) close(kids[i].fd);
      close(kids[i].back);
    }
    close(sig_pipe[0]);
    close(sig_pipe[1]);
    run_utterance(p[0], b[1], id);
  }
  close(p[0]);
  close(b[1]);
  fcntl(p[1], F_SETFL, O_NONBLOCK);
  fcntl(p[1], F_SETPIPE_SZ, CHILD_PIPE_BYTES); /* best effort: the backlog buffer covers the rest */
  *k = (child_t){.used = 1, .id = id, .pid = pid, .fd = p[1], .back = b[0]};
}

static void reap(void) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (int i = 0; i < MAX_CHILDREN; i++) {
      child_t *k = &kids[i];
      if (!k->used || k->pid != pid) continue;
      if (!k->cancelled && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        char why[64];
        if (WIFSIGNALED(status)) snprintf(why, sizeof why, "the decoder died (signal %d)", WTERMSIG(status));
        else snprintf(why, sizeof why, "the decoder failed (exit %d)", WEXITSTATUS(status));
        send_frame('E', k->id, why);
      }
      /* A child that finished its utterance left its cepstral mean: the next ones start from it. */
      cmn_t *cmn = decoder_cmn();
      float mean[MAX_CEP];
      if (cmn && !k->cancelled && read(k->back, mean, (size_t)cmn->veclen * sizeof(float)) ==
                                      (ssize_t)((size_t)cmn->veclen * sizeof(float)))
        cmn_live_set(cmn, mean);
      close(k->back);
      close_input(k);
      k->used = 0;
    }
  }
}

/* Parses the complete frames at the start of `in`; returns the bytes consumed. */
static size_t handle_frames(const unsigned char *in, size_t n) {
  size_t used = 0;
  while (n - used >= HEAD) {
    const unsigned char *head = in + used;
    uint32_t id, len;
    memcpy(&id, head + 1, 4);
    memcpy(&len, head + 5, 4);
    if (len > MAX_PAYLOAD || len % 2 != 0 || !strchr("OAFC", head[0]) || head[0] == 0) {
      fprintf(stderr, "pocketsphinx-stream: malformed frame (kind %d, %u bytes)\n", head[0], len);
      exit(3);
    }
    if (n - used < HEAD + len) break;
    child_t *k = head[0] == 'O' ? NULL : find(id);
    switch (head[0]) {
    case 'O': open_utterance(id); break;
    case 'A':
      if (k && !k->finishing) forward(k, head, head + HEAD, len);
      break;
    case 'F':
      if (k && !k->finishing) {
        forward(k, head, NULL, 0);
        k->finishing = 1;
        flush(k);
      }
      break;
    case 'C':
      if (k) {
        kill(k->pid, SIGKILL);
        k->cancelled = 1;
        close_input(k);
      }
      break;
    }
    used += HEAD + len;
  }
  return used;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: pocketsphinx-stream NICE [pocketsphinx arguments]\n");
    return 2;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the server that started it */
  signal(SIGPIPE, SIG_IGN);
  nice_level = atoi(argv[1]);
  /* No log file: ps_init also prints its whole configuration there. */
  err_set_logfp(NULL);
  err_set_callback(on_log, NULL);
  cmd_ln_t *config = cmd_ln_parse_r(NULL, ps_args(), argc - 2, argv + 2, 1);
  if (!config) {
    fprintf(stderr, "pocketsphinx-stream: bad pocketsphinx arguments\n");
    return 1;
  }
  ps_default_search_args(config);
  ps = ps_init(config);
  if (!ps) {
    fprintf(stderr, "pocketsphinx-stream: the decoder failed to load\n");
    return 1;
  }
  if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
  struct sigaction sa = {.sa_handler = on_sigchld, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
  sigaction(SIGCHLD, &sa, NULL);
  send_frame('Y', 0, NULL);

  static unsigned char in[2 * (MAX_PAYLOAD + HEAD)];
  size_t have = 0;
  struct pollfd fds[2 + MAX_CHILDREN];
  for (;;) {
    int n = 0;
    fds[n++] = (struct pollfd){0, POLLIN, 0};
    fds[n++] = (struct pollfd){sig_pipe[0], POLLIN, 0};
    int map[MAX_CHILDREN];
    for (int i = 0; i < MAX_CHILDREN; i++)
      if (kids[i].used && kids[i].fd >= 0 && kids[i].len > 0) {
        map[n - 2] = i;
        fds[n++] = (struct pollfd){kids[i].fd, POLLOUT, 0};
      }
    if (poll(fds, (nfds_t)n, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (fds[1].revents) {
      char drain[64];
      while (read(sig_pipe[0], drain, sizeof drain) > 0) {}
      reap();
    }
    for (int j = 2; j < n; j++)
      if (fds[j].revents) flush(&kids[map[j - 2]]);
    if (fds[0].revents) {
      ssize_t r = read(0, in + have, sizeof in - have);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break; /* the owner closed stdin or died */
      have += (size_t)r;
      size_t used = handle_frames(in, have);
      memmove(in, in + used, have - used);
      have -= used;
    }
  }
  for (int i = 0; i < MAX_CHILDREN; i++)
    if (kids[i].used) kill(kids[i].pid, SIGKILL);
  return 0;
}
