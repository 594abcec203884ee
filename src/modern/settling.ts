/**
 * A promise and, once it has fulfilled, its value: read without waiting on it (a turn of the microtasks)
 * when it is there. Whoever holds one and lets it go (to read again) drops the value with it.
 */
export class Settling<T> {
  /** What `promise` fulfilled with; undefined until then, and for good when it rejected. */
  value: T | undefined;

  constructor(readonly promise: Promise<T>) {
    // Its rejection is for whoever waits on `promise`: this only records a value.
    promise.then(
      (value) => {
        this.value = value;
      },
      () => undefined,
    );
  }
}
