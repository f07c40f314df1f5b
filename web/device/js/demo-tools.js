/**
 * The page's device-MCP tools, named and shaped like the firmware's common tools so
 * the server treats the page like a board: they act on the page itself (player volume, theme, a
 * notice on screen).
 */

/**
 * @param {{ getVolume: () => number, setVolume: (v: number) => void, getTheme: () => string,
 *   setTheme: (t: 'light'|'dark') => void, showNotice: (text: string) => void,
 *   systemInfo: () => Record<string, unknown> }} page
 * @returns {import('./device-mcp.js').DeviceTool[]}
 */
export function demoTools(page) {
  return [
    {
      name: 'self.get_device_status',
      description:
        'Provides the real-time information of the device, including the current status of the audio speaker, screen, network, etc.\nUse this tool for: \n1. Answering questions about current condition (e.g. what is the current volume of the audio speaker?)\n2. As the first step to control the device (e.g. turn up / down the volume of the audio speaker, etc.)',
      properties: {},
      run: () => ({
        audio_speaker: { volume: page.getVolume() },
        screen: { theme: page.getTheme() },
        network: { type: 'websocket', signal: 'strong' },
      }),
    },
    {
      name: 'self.audio_speaker.set_volume',
      description:
        'Set the volume of the audio speaker. If the current volume is unknown, you must call `self.get_device_status` tool first and then call this tool.',
      properties: { volume: { type: 'integer', minimum: 0, maximum: 100 } },
      run: (args) => {
        page.setVolume(Number(args.volume));
        return true;
      },
    },
    {
      name: 'self.screen.set_theme',
      description: 'Set the theme of the screen. The theme can be `light` or `dark`.',
      properties: { theme: { type: 'string' } },
      run: (args) => {
        if (args.theme !== 'light' && args.theme !== 'dark') return false;
        page.setTheme(args.theme);
        return true;
      },
    },
    {
      name: 'self.screen.show_notice',
      description:
        'Show a short text notice on the screen of the device for a few seconds, e.g. a reminder or a number the user asked to see.',
      properties: { text: { type: 'string' } },
      run: (args) => {
        page.showNotice(String(args.text));
        return true;
      },
    },
    {
      name: 'self.get_system_info',
      description: 'Get the system information of the device (browser, codec, identity).',
      properties: {},
      userOnly: true,
      run: () => page.systemInfo(),
    },
  ];
}
