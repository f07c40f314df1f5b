/*
 * espeak-pcm: a long-lived espeak-ng synthesis helper for the media workers (audio/tts/espeak-native.ts).
 *
 * Why: espeak-ng as WebAssembly costs 10-15 ms of a worker's CPU for a short sentence; the
 * native library needs 2-3 ms. One helper is started per media thread and serves every sentence
 * of that thread, so no process is started per sentence.
 *
 * Usage: espeak-pcm DIR [NICE]. It creates the FIFOs DIR/req and DIR/resp, prints "ready" on
 * stdout, removes DIR once both ends are open, then serves requests until req reaches end of file
 * (its owner closed it or died). It is killed with the thread that started it (PR_SET_PDEATHSIG).
 * Two FIFOs rather than stdin/stdout because the caller reads the answer synchronously, inside
 * a synthesis call, and Node only offers blocking reads on files it opened itself.
 *
 * Request (little-endian u32 fields): kind ('S' synthesise, 'V' list voices, 'R' resample the
 * s16 PCM sent as the text from `rate` Hz: lets the tests compare this resampler with audio/resample.ts
 * sample for sample, which espeak-ng's slightly varying output does not allow), rate, pitch,
 * voice length, text length, output sample rate (0: espeak-ng's own 22,050 Hz), then the voice
 * name and the UTF-8 text.
 * Answer: chunks of [i32 byte count][s16 PCM at the output rate], ended by a chunk of 0 bytes; a
 * negative count is an error (-2: unknown voice, -3: unsupported output rate, -1: synthesis
 * failed). 'V' answers one chunk of
 * NUL-separated names (identifiers, file names and languages), then 0.
 *
 * Resampling happens here, as the samples come: the same windowed-sinc kernel as
 * audio/resample.ts with 8 zero crossings (what the worker used for espeak-ng), a tenth of the
 * JavaScript's cost.
 *
 * Only the runtime library (libespeak-ng1, a dependency of the espeak-ng program) is needed: the
 * few entry points used are declared below instead of including the -dev package's header.
 */
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct espeak_event_opaque espeak_EVENT;
typedef int(t_espeak_callback)(short *, int, espeak_EVENT *);
typedef struct {
  const char *name;
  const char *languages; /* repeated: one priority byte, a NUL-terminated name; ends with a 0 byte */
  const char *identifier;
  unsigned char gender, age, variant, xx1;
  int score;
  void *spare;
} espeak_VOICE;
extern int espeak_Initialize(int output, int buflength, const char *path, int options);
extern void espeak_SetSynthCallback(t_espeak_callback *cb);
extern int espeak_SetVoiceByName(const char *name);
extern int espeak_SetParameter(int parameter, int value, int relative);
extern int espeak_Synth(const void *text, size_t size, unsigned int position, int position_type,
                        unsigned int end_position, unsigned int flags, unsigned int *id, void *user_data);
extern const espeak_VOICE **espeak_ListVoices(espeak_VOICE *spec);

enum { AUDIO_OUTPUT_SYNCHRONOUS = 2, POS_CHARACTER = 1, CHARS_UTF8 = 1, PARAM_RATE = 1, PARAM_PITCH = 3 };
enum { INIT_DONT_EXIT = 0x8000, MAX_FIELD = 1 << 20 };
/* A request that takes longer than this kills the helper (SIGALRM): its caller blocks on the
   answer, so a hung library must end in end-of-file, not in a wait forever. */
enum { REQUEST_TIMEOUT_S = 20 };

static int out_fd = -1;
static void chunk(const void *data, int32_t bytes);

/* ---- streaming polyphase resampler: Blackman-windowed sinc, cut-off 0.92 of the lower Nyquist ---- */
enum { ZERO_CROSSINGS = 8, MAX_PHASES = 4096, OUT_BLOCK = 4096 };
static const double CUTOFF = 0.92;

typedef struct {
  int active, from, to, num, den, half, taps;
  float *table;       /* den rows of taps weights, each row normalised to unit gain */
  float *buf;         /* pending input; buf[0] is absolute input index start */
  long long len, cap, start, total, out;
  short block[OUT_BLOCK];
  int block_len;
} resampler;

static resampler rs;

static long long gcd_ll(long long a, long long b) {
  while (b) { long long t = a % b; a = b; b = t; }
  return a;
}

static double tap_weight(double d, double cutoff, int half) {
  double x = d / half;
  if (x <= -1 || x >= 1) return 0;
  double w = 0.42 + 0.5 * cos(M_PI * x) + 0.08 * cos(2 * M_PI * x);
  double a = M_PI * cutoff * d;
  return (a == 0 ? 1 : sin(a) / a) * cutoff * w;
}

static void emit_block(void) {
  if (rs.block_len > 0) chunk(rs.block, rs.block_len * 2);
  rs.block_len = 0;
}

static void append_input(const short *s, long long n, int zeros) {
  if (rs.len + n > rs.cap) {
    long long cap = rs.cap * 2 > rs.len + n ? rs.cap * 2 : rs.len + n;
    float *grown = realloc(rs.buf, (size_t)cap * sizeof(float));
    if (!grown) _exit(5);
    rs.buf = grown;
    rs.cap = cap;
  }
  for (long long i = 0; i < n; i++) rs.buf[rs.len + i] = zeros ? 0.0f : s[i] / 32768.0f;
  rs.len += n;
}

static void produce(int final) {
  long long avail_end = rs.start + rs.len;
  for (;;) {
    long long i = rs.out * rs.num / rs.den;
    if (final ? i >= rs.total : i + rs.half >= avail_end) break;
    long long phase = rs.out * rs.num - i * rs.den;
    const float *x = rs.buf + (i - rs.half + 1 - rs.start);
    const float *w = rs.table + phase * rs.taps;
    double acc = 0;
    for (int j = 0; j < rs.taps; j++) acc += (double)x[j] * w[j];
    double v = floor(acc * 32768 + 0.5);
    rs.block[rs.block_len++] = (short)(v > 32767 ? 32767 : v < -32768 ? -32768 : v);
    if (rs.block_len == OUT_BLOCK) emit_block();
    rs.out++;
  }
  long long keep_from = rs.out * rs.num / rs.den - rs.half + 1 - rs.start;
  if (keep_from > 0) {
    memmove(rs.buf, rs.buf + keep_from, (size_t)(rs.len - keep_from) * sizeof(float));
    rs.len -= keep_from;
    rs.start += keep_from;
  }
}

/* Prepares the resampler for one synthesis from `from` Hz to `to` Hz; inactive when equal. */
static int resampler_begin(int from, int to) {
  rs.active = to > 0 && to != from;
  if (!rs.active) return 1;
  long long g = gcd_ll(from, to);
  if (rs.from != from || rs.to != to) {
    int den = (int)(to / g);
    if (den > MAX_PHASES) return 0;
    double cutoff = (to < from ? (double)to / from : 1.0) * CUTOFF;
    int half = (int)ceil(ZERO_CROSSINGS / cutoff), taps = 2 * half;
    float *table = malloc((size_t)den * taps * sizeof(float));
    if (!table) return 0;
    for (int p = 0; p < den; p++) {
      double frac = (double)p / den, sum = 0;
      for (int j = 0; j < taps; j++) sum += (table[p * taps + j] = (float)tap_weight(frac + half - 1 - j, cutoff, half));
      for (int j = 0; j < taps; j++) table[p * taps + j] = (float)(table[p * taps + j] / sum);
    }
    free(rs.table);
    rs.table = table;
    rs.from = from;
    rs.to = to;
    rs.num = (int)(from / g);
    rs.den = den;
    rs.half = half;
    rs.taps = taps;
  }
  /* `half` zeros of history, so the first outputs have a whole window. */
  rs.len = 0;
  rs.start = -rs.half;
  rs.total = 0;
  rs.out = 0;
  rs.block_len = 0;
  append_input(NULL, rs.half, 1);
  return 1;
}

static void resampler_push(const short *s, int n) {
  append_input(s, n, 0);
  rs.total += n;
  produce(0);
}

static void resampler_end(void) {
  append_input(NULL, rs.half + 1, 1);
  produce(1);
  emit_block();
}

static void write_all(const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(out_fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) _exit(3); /* the reader is gone */
    p += w;
    n -= (size_t)w;
  }
}

static void chunk(const void *data, int32_t bytes) {
  write_all(&bytes, 4);
  if (bytes > 0) write_all(data, (size_t)bytes);
}

static int read_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    p += r;
    n -= (size_t)r;
  }
  return 1;
}

static int on_samples(short *wav, int n, espeak_EVENT *events) {
  (void)events;
  if (!wav || n <= 0) return 0;
  if (rs.active) resampler_push(wav, n);
  else chunk(wav, n * 2);
  return 0;
}

static void list_voices(void) {
  const espeak_VOICE **v = espeak_ListVoices(NULL);
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  if (!buf) return chunk(NULL, -1);
  for (; v && *v; v++) {
    const char *names[64];
    int count = 0;
    names[count++] = (*v)->identifier;
    const char *slash = strrchr((*v)->identifier, '/');
    if (slash) names[count++] = slash + 1;
    for (const char *l = (*v)->languages; l && *l && count < 64; l += strlen(l + 1) + 2) names[count++] = l + 1;
    for (int i = 0; i < count; i++) {
      size_t n = strlen(names[i]) + 1;
      if (len + n > cap) {
        char *grown = realloc(buf, cap *= 2);
        if (!grown) { free(buf); return chunk(NULL, -1); }
        buf = grown;
      }
      memcpy(buf + len, names[i], n);
      len += n;
    }
  }
  chunk(buf, (int32_t)len);
  free(buf);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: espeak-pcm DIR [NICE]\n");
    return 2;
  }
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the thread that started it */
  signal(SIGPIPE, SIG_IGN);
  if (argc > 2) setpriority(PRIO_PROCESS, 0, atoi(argv[2]));
  int rate = espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 100, NULL, INIT_DONT_EXIT);
  if (rate <= 0) {
    fprintf(stderr, "espeak-pcm: espeak-ng failed to initialise\n");
    return 1;
  }
  espeak_SetSynthCallback(on_samples);
  char req[4096], resp[4096];
  snprintf(req, sizeof req, "%s/req", argv[1]);
  snprintf(resp, sizeof resp, "%s/resp", argv[1]);
  if (mkfifo(req, 0600) != 0 || mkfifo(resp, 0600) != 0) {
    perror("espeak-pcm: mkfifo");
    return 1;
  }
  printf("ready %d\n", rate);
  fflush(stdout);
  int in_fd = open(req, O_RDONLY);
  out_fd = open(resp, O_WRONLY);
  if (in_fd < 0 || out_fd < 0) {
    perror("espeak-pcm: open");
    return 1;
  }
  /* Both ends are open: the names are no longer needed, and nothing is left behind on disk. */
  unlink(req);
  unlink(resp);
  rmdir(argv[1]);
  char current[256] = "";
  for (;;) {
    uint32_t head[6];
    if (!read_all(in_fd, head, sizeof head)) return 0;
    uint32_t kind = head[0], voice_len = head[3], text_len = head[4], out_rate = head[5];
    if (voice_len >= sizeof current || text_len > MAX_FIELD) return 4;
    char voice[256];
    char *text = malloc(text_len + 1);
    if (!text || !read_all(in_fd, voice, voice_len) || !read_all(in_fd, text, text_len)) return 0;
    voice[voice_len] = 0;
    text[text_len] = 0;
    alarm(REQUEST_TIMEOUT_S);
    if (kind == 'V') {
      list_voices();
      chunk(NULL, 0);
    } else if (kind == 'R') {
      if (head[1] == 0 || head[1] > 192000 || out_rate > 192000 || !resampler_begin((int)head[1], (int)out_rate)) {
        chunk(NULL, -3);
      } else if (rs.active) {
        resampler_push((const short *)text, (int)(text_len / 2));
        resampler_end();
        chunk(NULL, 0);
      } else {
        chunk(text, (int32_t)(text_len & ~1u));
        chunk(NULL, 0);
      }
    } else if (strcmp(voice, current) != 0 && espeak_SetVoiceByName(voice) != 0) {
      current[0] = 0;
      chunk(NULL, -2);
    } else {
      strcpy(current, voice);
      espeak_SetParameter(PARAM_RATE, (int)head[1], 0);
      espeak_SetParameter(PARAM_PITCH, (int)head[2], 0);
      if (out_rate > 192000 || !resampler_begin(rate, (int)out_rate)) {
        chunk(NULL, -3);
      } else {
        int err = espeak_Synth(text, text_len + 1, 0, POS_CHARACTER, 0, CHARS_UTF8, NULL, NULL);
        if (rs.active) resampler_end();
        chunk(NULL, err == 0 ? 0 : -1);
      }
    }
    alarm(0);
    free(text);
  }
}
