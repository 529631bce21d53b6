/** Where the console lives; every path below it is behind the OS operator gate except the login page. */
export const CONSOLE = "/console";
export const CONSOLE_PATHS = {
  overview: `${CONSOLE}/`,
  runs: `${CONSOLE}/runs`,
  problems: `${CONSOLE}/problems`,
  result: (deviceId: string, resultId: string) =>
    `${CONSOLE}/results/${encodeURIComponent(deviceId)}/${encodeURIComponent(resultId)}`,
  panel: (name: string) => `${CONSOLE}/panels/${name}`,
  events: `${CONSOLE}/events`,
  redrive: `${CONSOLE}/dead-letters/redrive`,
  login: `${CONSOLE}/login`,
  logout: `${CONSOLE}/logout`,
  script: `${CONSOLE}/assets/console.js`,
  stylesheet: `${CONSOLE}/assets/console.css`,
  playbackQueue: `${CONSOLE}/queues`,
} as const;
