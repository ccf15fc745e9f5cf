// Yielding to the event loop, shared by the page's modules and its workers
// (no DOM here).

/** A task of its own, unclamped as nested timeouts are: on the page, lets
 * its other tasks run (input, drawing); in a worker, lets messages in (a
 * cancel) between chunks it reads synchronously. */
export function nextTask() {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}
