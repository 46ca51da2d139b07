"""Train a small CNN on scikit-learn's bundled digits (8x8 images, 1,797 samples).

Run:

    python examples/train_cnn_digits.py --epochs 30

Reaches about 98% test accuracy on the CPU in seconds, prints the per-class accuracy and the
confusion matrix, and saves and reloads a checkpoint.
"""

from __future__ import annotations

import argparse

import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.utils.data import DataLoader, TensorDataset


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.2),
        nn.Linear(64 * 2 * 2, 10),
    )


def load_digits(seed: int):
    from sklearn.datasets import load_digits as sklearn_digits

    digits = sklearn_digits()
    images = digits.images.astype(np.float32) / 16.0
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    images, labels = images[order], labels[order]
    cut = int(0.8 * len(labels))
    to = lambda a: ember.from_numpy(np.ascontiguousarray(a))  # noqa: E731
    train = TensorDataset(to(images[:cut, None]), to(labels[:cut]))
    test = TensorDataset(to(images[cut:, None]), to(labels[cut:]))
    return train, test


def predict(model, loader, device):
    model.eval()
    preds, targets = [], []
    with ember.no_grad():
        for x, y in loader:
            preds.append(model(x.to(device)).argmax(1).cpu())
            targets.append(y)
    model.train()
    return ember.cat(preds).numpy(), ember.cat(targets).numpy()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--checkpoint", default="digits_checkpoint.pt")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    ember.manual_seed(args.seed)
    device = ember.device(args.device)
    train, test = load_digits(args.seed)
    train_loader = DataLoader(
        train,
        batch_size=args.batch,
        shuffle=True,
        num_workers=args.workers,
        generator=ember.Generator().manual_seed(args.seed),
    )
    test_loader = DataLoader(test, batch_size=256)
    model = build_model().to(device)
    optimizer = ember.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)

    step = 0
    for epoch in range(args.epochs):
        total, count = 0.0, 0
        for x, y in train_loader:
            loss = F.cross_entropy(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * y.shape[0]
            count += y.shape[0]
            step += 1
            if args.steps and step >= args.steps:
                break
        scheduler.step()
        preds, targets = predict(model, test_loader, device)
        print(
            f"epoch {epoch + 1:3d}  train loss {total / count:.4f}  test accuracy "
            f"{(preds == targets).mean():.4f}"
        )
        if args.steps and step >= args.steps:
            break

    preds, targets = predict(model, test_loader, device)
    accuracy = (preds == targets).mean()
    confusion = np.zeros((10, 10), dtype=int)
    np.add.at(confusion, (targets, preds), 1)
    print(f"\ntest accuracy {accuracy:.4f}\nper-class accuracy:")
    for digit in range(10):
        print(f"  {digit}: {confusion[digit, digit] / confusion[digit].sum():.3f}")
    print("confusion matrix (rows: true digit, columns: predicted):")
    print(confusion)

    ember.save({"model": model.state_dict(), "epoch": args.epochs}, args.checkpoint)
    reloaded = build_model().to(device)
    reloaded.load_state_dict(ember.load(args.checkpoint)["model"])
    again, _ = predict(reloaded, test_loader, device)
    print(
        f"checkpoint {args.checkpoint}: reloaded model agrees on {(again == preds).mean():.0%} of "
        "test predictions"
    )


if __name__ == "__main__":
    main()
