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
 * Request (little-endian u32 fields): kind ('S' synthesise, 'V' list voices), rate, pitch,
 * voice length, text length, then the voice name and the UTF-8 text.
 * Answer: chunks of [i32 byte count][s16 PCM at 22,050 Hz], ended by a chunk of 0 bytes; a
 * negative count is an error (-2: unknown voice, -1: synthesis failed). 'V' answers one chunk of
 * NUL-separated names (identifiers, file names and languages), then 0.
 *
 * Only the runtime library (libespeak-ng1, a dependency of the espeak-ng program) is needed: the
 * few entry points used are declared below instead of including the -dev package's header.
 */
#include <errno.h>
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

static int out_fd = -1;

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
  if (wav && n > 0) chunk(wav, n * 2);
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
    uint32_t head[5];
    if (!read_all(in_fd, head, sizeof head)) return 0;
    uint32_t kind = head[0], voice_len = head[3], text_len = head[4];
    if (voice_len >= sizeof current || text_len > MAX_FIELD) return 4;
    char voice[256];
    char *text = malloc(text_len + 1);
    if (!text || !read_all(in_fd, voice, voice_len) || !read_all(in_fd, text, text_len)) return 0;
    voice[voice_len] = 0;
    text[text_len] = 0;
    if (kind == 'V') {
      list_voices();
      chunk(NULL, 0);
    } else if (strcmp(voice, current) != 0 && espeak_SetVoiceByName(voice) != 0) {
      current[0] = 0;
      chunk(NULL, -2);
    } else {
      strcpy(current, voice);
      espeak_SetParameter(PARAM_RATE, (int)head[1], 0);
      espeak_SetParameter(PARAM_PITCH, (int)head[2], 0);
      int err = espeak_Synth(text, text_len + 1, 0, POS_CHARACTER, 0, CHARS_UTF8, NULL, NULL);
      chunk(NULL, err == 0 ? 0 : -1);
    }
    free(text);
  }
}
