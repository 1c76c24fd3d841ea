package demo;

public class Counter1 {
    public int sum(int[] values) {
        int total = 0;
        for (int v : values) {
            if (v > 1) { total += v; } else { total -= 1; }
        }
        return total;
    }
}
